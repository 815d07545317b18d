"""Schedulable `nvidia.com/gpu` per node as the NodeOverlays and the NodePool limits write it.

Schedulable `nvidia.com/gpu` = physical GPUs x sharing replicas is worked out once in
`components/settings/resolved.py` (`slots`); the capacity rows, slot ceilings and warm headroom the summary and the
alarms print are attributes of the resolved model (`StackSettings.resolved`).
"""

from __future__ import annotations

from components.settings import GpuSharingSettings
from components.settings.resolved import MANAGED_GROUP_POOL, slots

__all__ = ["MANAGED_GROUP_POOL"]


def schedulable_gpus(physical_gpus: int, sharing: GpuSharingSettings) -> int:
    """`nvidia.com/gpu` a node advertises once the device plugin applies `sharing`."""
    return slots(physical_gpus, sharing.replicas)


def warm_nodes_held(warm_slots: int, physical_gpus: int, sharing: GpuSharingSettings) -> int:
    """Nodes of one instance type that keep `warm_slots` shared slots free: ceil(slots / (GPUs x replicas))."""
    return -(-warm_slots // schedulable_gpus(physical_gpus, sharing))
