"""The spawn page of a lab's hub: one profile per Karpenter pool the hub offers, plus a small CPU-only profile.

Profiles are generated, never typed: one per Karpenter pool the hub offers (`hub.pools`, default all), each
requesting exactly one shared `nvidia.com/gpu` slot, tolerating the GPU taint, pinned to its pool by
`karpenter.sh/nodepool` and sized like the pool's warm slot (the resolved pool's `warm_slot_shape`: one slot's
share of the pool's smallest node after system reservations, the math the warm headroom uses), so a notebook
lands exactly where a CapacityBuffer kept room. The caller hands the resolved pools the hub offers
(`ResolvedStack.hub_pools`). `profile_list` renders them as the chart's `singleuser.profileList` (kubespawner traits per
profile). Pure: settings in, dicts out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from components.facts import gpu_catalog
from components.facts.constants import (
    GPU_RESOURCE,
    GPU_TOLERATION,
    NODEPOOL_LABEL,
    USER_NODE_LABEL_KEY,
    USER_NODE_LABEL_VALUE,
    USER_TOLERATION,
)
from components.facts.pod_requests import CPU_NOTEBOOK_REQUESTS
from components.settings import KarpenterPool, NodePoolSettings, SlotModel, WarmSlotShape

Values = dict[str, Any]

CPU_PROFILE: Final = "cpu"
# The CPU-only profile: small, for reading and preparing notebooks, on the CPU user pool (never the system nodes).
CPU_PROFILE_SHAPE: Final = WarmSlotShape(
    cpu_millicores=CPU_NOTEBOOK_REQUESTS.cpu_millicores, memory_mib=CPU_NOTEBOOK_REQUESTS.memory_mib
)


@dataclass(frozen=True)
class Profile:
    """One choice on the hub's spawn page."""

    slug: str
    display_name: str
    description: str
    shape: WarmSlotShape
    pool: str | None  # the Karpenter pool of a GPU profile; None for the CPU profile

    @property
    def gpu(self) -> bool:
        return self.pool is not None


def _gpu_names(pool: NodePoolSettings) -> str:
    models = dict.fromkeys(gpu_catalog.gpu_model(t) for t in pool.selected_instance_types)
    return "/".join(model.name.upper() for model in models)


def gigabytes(mib: int) -> str:
    """GPU memory as a learner reads it (GiB, written GB as nvidia-smi users say it): whole from 10 up, else one
    decimal."""
    gib = mib / 1024
    return f"{round(gib)}" if gib >= 10 else f"{round(gib, 1):g}"


def display_name(gpus: str, slot: SlotModel) -> str:
    """What the profile promises, and only what the kind delivers (docs/sharing-kinds.md)."""
    memory, others = gigabytes(slot.memory_mib), slot.replicas - 1
    with_others = f"{others} other{'s' if others != 1 else ''}"
    if slot.kind == "time-slicing":
        return f"Shared {gpus}, time-sliced — about {memory} GB GPU memory, not fenced: shared with {with_others}"
    if slot.kind == "mps":
        return f"Shared {gpus}, MPS — {memory} GB GPU memory capped, compute shared with {with_others}"
    if slot.kind == "g6f":
        return f"{gpus} slice — {memory} GB GPU memory, yours alone"
    return f"Whole {gpus} — {memory} GB GPU memory, yours alone"


def gpu_profile(offered: KarpenterPool) -> Profile:
    pool, shape = offered.settings, offered.warm_slot_shape
    name = display_name(_gpu_names(pool), offered.slot)
    description = f"{shape.cpu_millicores / 1000:g} CPU, {shape.memory_mib // 1024} GiB RAM, pool {pool.name}"
    return Profile(gpu_profile_slug(pool.name), name, description, shape, pool.name)


def gpu_profile_slug(pool_name: str) -> str:
    """The spawn-page slug of the GPU profile of one pool (KubeSpawner keeps it as the server's `profile` option)."""
    return f"gpu-{pool_name}"


def cpu_profile() -> Profile:
    shape = CPU_PROFILE_SHAPE
    description = f"{shape.cpu_millicores / 1000:g} CPU, {shape.memory_mib // 1024} GiB RAM, no GPU"
    return Profile(CPU_PROFILE, "CPU only — no GPU", description, shape, None)


def profiles(pools: Sequence[KarpenterPool]) -> tuple[Profile, ...]:
    """The GPU profiles (one per pool the hub offers, in config order), then the CPU profile."""
    return (*(gpu_profile(pool) for pool in pools), cpu_profile())


def memory_quantity(shape: WarmSlotShape) -> str:
    return f"{shape.memory_mib}M"  # kubespawner's ByteSpecification: M = MiB


def cpu_cores(shape: WarmSlotShape) -> float:
    return shape.cpu_millicores / 1000


def kubespawner_override(profile: Profile) -> Values:
    """kubespawner traits of one profile: requests = limits (the slot is sized exactly), GPU placement."""
    override: Values = {
        "cpu_guarantee": cpu_cores(profile.shape),
        "cpu_limit": cpu_cores(profile.shape),
        "mem_guarantee": memory_quantity(profile.shape),
        "mem_limit": memory_quantity(profile.shape),
    }
    if profile.pool is not None:
        override |= {
            "extra_resource_guarantees": {GPU_RESOURCE: "1"},
            "extra_resource_limits": {GPU_RESOURCE: "1"},
            "tolerations": [dict(GPU_TOLERATION)],
            "node_selector": {NODEPOOL_LABEL: profile.pool},
        }
    else:
        # The CPU user pool: z2jh's user label and the toleration of its user taint (cpu_user_pool_manifests).
        override |= {
            "tolerations": [dict(USER_TOLERATION)],
            "node_selector": {USER_NODE_LABEL_KEY: USER_NODE_LABEL_VALUE},
        }
    return override


def profile_list(pools: Sequence[KarpenterPool]) -> list[Values]:
    """`singleuser.profileList`: the first GPU profile is the default."""
    return [
        {
            "display_name": p.display_name,
            "slug": p.slug,
            "description": p.description,
            **({"default": True} if index == 0 else {}),
            "kubespawner_override": kubespawner_override(p),
        }
        for index, p in enumerate(profiles(pools))
    ]
