"""GPU capacity as the synth summary, the NodeOverlays and the alarms report it: rows read from the capacity model.

Schedulable `nvidia.com/gpu` = physical GPUs x sharing replicas is worked out once per pool in
`components/settings/resolved.py`; this module only lays it out (per pool and instance type).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.settings import GpuSharingSettings, KarpenterPool, LabSettings
from components.settings.resolved import MANAGED_GROUP_POOL, ResolvedPool, slots

__all__ = ["MANAGED_GROUP_POOL"]


def schedulable_gpus(physical_gpus: int, sharing: GpuSharingSettings) -> int:
    """`nvidia.com/gpu` a node advertises once the device plugin applies `sharing`."""
    return slots(physical_gpus, sharing.replicas)


@dataclass(frozen=True)
class CapacityRow:
    pool: str
    instance_type: str
    physical_gpus: int
    sharing: str  # the sharing profile
    replicas: int
    schedulable_per_node: int
    schedulable_at_limit: int  # at the pool's nvidia.com/gpu limit (managed group: at maxSize)


def capacity_rows(pools: Sequence[ResolvedPool]) -> list[CapacityRow]:
    """One row per pool and instance type; `pools`: every resolved GPU pool (`StackSettings.resolved.pools`)."""
    return [
        CapacityRow(
            pool.name,
            node.instance_type,
            node.gpus,
            pool.sharing.profile,
            pool.replicas,
            node.slots,
            # gpuLimit counts physical GPUs; the NodePool's nvidia.com/gpu limit is gpuLimit x replicas.
            pool.slots_at_limit(node),
        )
        for pool in pools
        for node in pool.nodes
    ]


def warm_nodes_held(warm_slots: int, physical_gpus: int, sharing: GpuSharingSettings) -> int:
    """Nodes of one instance type that keep `warm_slots` shared slots free: ceil(slots / (GPUs x replicas))."""
    return -(-warm_slots // schedulable_gpus(physical_gpus, sharing))


@dataclass(frozen=True)
class WarmHeadroomRow:
    pool: str
    instance_type: str
    warm_slots: int
    slots_per_node: int
    nodes_held: int  # if Karpenter picks this instance type for the buffer


def warm_headroom_rows(pools: Sequence[KarpenterPool]) -> list[WarmHeadroomRow]:
    """Per pool with warm slots and per instance type it may launch: the nodes the headroom keeps running.

    `pools`: the resolved Karpenter pools (`StackSettings.resolved.karpenter_pools`).
    """
    rows = []
    for pool in pools:
        warm = pool.settings.warm_gpu_slots
        if warm <= 0:
            continue
        rows += [
            WarmHeadroomRow(pool.name, node.instance_type, warm, node.slots, node.nodes_for(warm))
            for node in pool.nodes
        ]
    return rows


def pool_slot_ceilings(pools: Sequence[ResolvedPool]) -> dict[str, int]:
    """Most `nvidia.com/gpu` slots each pool (and the managed group) can ever advertise.

    The managed group counts its largest instance type (an upper bound: the group may launch any of them).
    `pools`: every resolved GPU pool (`StackSettings.resolved.pools`).
    """
    ceilings: dict[str, int] = {}
    for row in capacity_rows(pools):
        ceilings[row.pool] = max(ceilings.get(row.pool, 0), row.schedulable_at_limit)
    return dict(sorted(ceilings.items()))


def max_schedulable_slots(pools: Sequence[ResolvedPool]) -> int:
    """Shared GPU slots the pools can ever provide: every pool at its limit, the managed group at maxSize."""
    return sum(pool_slot_ceilings(pools).values())


def lab_slot_warning(pools: Sequence[ResolvedPool], labs: Sequence[LabSettings]) -> str | None:
    """A warning when the labs together may hold more slots than the GPU pools (`pools`) can ever provide."""
    wanted = sum(lab.gpu_slots for lab in labs)
    available = max_schedulable_slots(pools)
    if wanted <= available:
        return None
    return (
        f"WARNING: the labs' gpuSlots add up to {wanted}, but the GPU pools can provide at most {available} "
        "shared slots (pool gpuLimit x sharing replicas, managed group maxSize x GPUs x replicas); "
        "some quota can never be used at once"
    )
