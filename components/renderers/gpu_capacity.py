"""GPU capacity math: schedulable `nvidia.com/gpu` = physical GPUs x sharing replicas.

The one place this product multiplies GPUs by replicas: NodeOverlays advertise it to Karpenter,
the device plugin makes it true on the node, and the synth summary reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

from components import gpu_catalog
from components.settings import GpuSharingSettings, StackSettings

MANAGED_GROUP_POOL = "managed-gpu-group"


def schedulable_gpus(physical_gpus: int, sharing: GpuSharingSettings) -> int:
    """`nvidia.com/gpu` a node advertises once the device plugin applies `sharing`."""
    return physical_gpus * sharing.replicas


@dataclass(frozen=True)
class CapacityRow:
    pool: str
    instance_type: str
    physical_gpus: int
    sharing: str  # the sharing profile
    replicas: int
    schedulable_per_node: int
    schedulable_at_limit: int  # at the pool's nvidia.com/gpu limit (managed group: at maxSize)


def capacity_rows(settings: StackSettings) -> list[CapacityRow]:
    rows = []
    if settings.gpu_node_group.enabled:
        sharing = settings.gpu_sharing
        for instance_type in settings.gpu_node_group.instance_types:
            gpus = gpu_catalog.gpu_count(instance_type)
            per_node = schedulable_gpus(gpus, sharing)
            rows.append(
                CapacityRow(
                    MANAGED_GROUP_POOL,
                    instance_type,
                    gpus,
                    sharing.profile,
                    sharing.replicas,
                    per_node,
                    per_node * settings.gpu_node_group.max_size,
                )
            )
    if settings.karpenter.enabled:
        for pool in settings.karpenter.node_pools:
            sharing = settings.sharing_for(pool)
            for instance_type in pool.selected_instance_types:
                gpus = gpu_catalog.gpu_count(instance_type)
                rows.append(
                    CapacityRow(
                        pool.name,
                        instance_type,
                        gpus,
                        sharing.profile,
                        sharing.replicas,
                        schedulable_gpus(gpus, sharing),
                        # gpuLimit counts physical GPUs; the NodePool's nvidia.com/gpu limit is gpuLimit x replicas.
                        schedulable_gpus(pool.gpu_limit, sharing),
                    )
                )
    return rows


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


def warm_headroom_rows(settings: StackSettings) -> list[WarmHeadroomRow]:
    """Per pool with warm slots and per instance type it may launch: the nodes the headroom keeps running."""
    if not settings.karpenter.enabled:
        return []
    rows = []
    for pool in settings.karpenter.node_pools:
        if pool.warm_gpu_slots <= 0:
            continue
        sharing = settings.sharing_for(pool)
        for instance_type in pool.selected_instance_types:
            gpus = gpu_catalog.gpu_count(instance_type)
            rows.append(
                WarmHeadroomRow(
                    pool.name,
                    instance_type,
                    pool.warm_gpu_slots,
                    schedulable_gpus(gpus, sharing),
                    warm_nodes_held(pool.warm_gpu_slots, gpus, sharing),
                )
            )
    return rows


def pool_slot_ceilings(settings: StackSettings) -> dict[str, int]:
    """Most `nvidia.com/gpu` slots each pool (and the managed group) can ever advertise.

    The managed group counts its largest instance type (an upper bound: the group may launch any of them).
    """
    ceilings: dict[str, int] = {}
    for row in capacity_rows(settings):
        ceilings[row.pool] = max(ceilings.get(row.pool, 0), row.schedulable_at_limit)
    return dict(sorted(ceilings.items()))


def max_schedulable_slots(settings: StackSettings) -> int:
    """Shared GPU slots the pools can ever provide: every pool at its limit, the managed group at maxSize."""
    return sum(pool_slot_ceilings(settings).values())


def lab_slot_warning(settings: StackSettings) -> str | None:
    """A warning when the labs together may hold more slots than the GPU pools can ever provide."""
    wanted = sum(lab.gpu_slots for lab in settings.labs)
    available = max_schedulable_slots(settings)
    if wanted <= available:
        return None
    return (
        f"WARNING: the labs' gpuSlots add up to {wanted}, but the GPU pools can provide at most {available} "
        "shared slots (pool gpuLimit x sharing replicas, managed group maxSize x GPUs x replicas); "
        "some quota can never be used at once"
    )
