"""One capacity model: what each GPU pool holds, worked out once per pool from the one catalog.

Per pool (a Karpenter NodePool, or the managed GPU group) and per instance type it may launch: physical GPUs
and vCPUs (`components/facts/gpu_catalog.py`), shared `nvidia.com/gpu` slots per node (GPUs x sharing replicas:
`slots` is the one place that product is taken), what one node offers pods once the DaemonSets that run there
are placed (`components/facts/node_allocatable.py`), how many nodes hold a number of slots and whether they stay within
the pool's limits, the default warm slot shape, and the vCPUs the pool can count against EC2 quotas.

The settings rules (warm headroom, timetables, hubs), the NodeOverlays, the device plugin's slots, the warm
headroom, the quota, the alarms and the synth summary read it; nothing else multiplies GPUs by replicas
(tests/test_capacity.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.facts import gpu_catalog, node_allocatable
from components.settings.gpu import GpuSharingSettings
from components.settings.karpenter import TYPICAL_WARM_SLOT, NodePoolSettings, WarmSlotShape

if TYPE_CHECKING:
    from components.settings.stack import StackSettings

# The name the managed GPU node group goes by where pools are listed (summary, dashboards).
MANAGED_GROUP_POOL = "managed-gpu-group"


def slots(physical_gpus: int, replicas: int) -> int:
    """Shared `nvidia.com/gpu` slots `physical_gpus` GPUs offer once the device plugin applies `replicas`."""
    return physical_gpus * replicas


@dataclass(frozen=True)
class NodeCapacity:
    """One node of one instance type in one pool."""

    instance_type: str
    gpus: int  # physical GPUs
    vcpus: int
    slots: int  # shared nvidia.com/gpu: GPUs x the pool's sharing replicas
    allocatable: node_allocatable.Allocatable  # what pods get after system reservations and DaemonSets

    def nodes_for(self, wanted_slots: int) -> int:
        """Nodes of this type that hold `wanted_slots` slots: ceil(slots / slots per node)."""
        return -(-wanted_slots // self.slots)


@dataclass(frozen=True)
class PoolCapacity:
    """A pool's capacity: its sharing, one `NodeCapacity` per instance type it may launch, and its limits.

    A Karpenter pool is bounded by gpuLimit (physical GPUs) and cpuLimit (vCPUs); the managed group by maxSize.
    """

    name: str
    sharing: GpuSharingSettings
    nodes: tuple[NodeCapacity, ...]  # in the pool's instance-type order
    gpu_limit: int | None = None  # Karpenter pools
    cpu_limit: int | None = None  # Karpenter pools
    max_nodes: int | None = None  # the managed group: maxSize
    desired_nodes: int | None = None  # the managed group: desiredSize

    @property
    def replicas(self) -> int:
        return self.sharing.replicas

    def node(self, instance_type: str) -> NodeCapacity:
        return next(node for node in self.nodes if node.instance_type == instance_type)

    def slots_at_limit(self, node: NodeCapacity) -> int:
        """Most slots the pool advertises on nodes of this type: gpuLimit x replicas, or maxSize nodes' slots."""
        if self.gpu_limit is not None:
            return slots(self.gpu_limit, self.replicas)
        assert self.max_nodes is not None
        return node.slots * self.max_nodes

    @property
    def slot_limit(self) -> int:
        """The pool's `nvidia.com/gpu` limit (Karpenter pools: gpuLimit x replicas)."""
        return max(self.slots_at_limit(node) for node in self.nodes)

    def within_limits(self, wanted_slots: int) -> tuple[str, ...]:
        """Instance types whose nodes holding `wanted_slots` slots stay within cpuLimit and gpuLimit."""
        assert self.gpu_limit is not None and self.cpu_limit is not None
        return tuple(
            node.instance_type
            for node in self.nodes
            if node.nodes_for(wanted_slots) * node.vcpus <= self.cpu_limit
            and node.nodes_for(wanted_slots) * node.gpus <= self.gpu_limit
        )

    def default_warm_slot_shape(self) -> WarmSlotShape:
        """The largest share up to a typical lab pod that lets every node of the pool hold all its slots."""
        cpu, memory = TYPICAL_WARM_SLOT.cpu_millicores, TYPICAL_WARM_SLOT.memory_mib
        for node in self.nodes:
            cpu = min(cpu, node.allocatable.cpu_millicores // node.slots // 50 * 50)  # round down to 50m
            memory = min(memory, node.allocatable.memory_mib // node.slots // 64 * 64)  # and to 64 MiB
        return WarmSlotShape(cpu_millicores=max(cpu, 10), memory_mib=max(memory, 16))

    @property
    def quota_vcpus(self) -> int:
        """vCPUs the pool can run at its limits, counted against EC2's vCPU quotas.

        A Karpenter pool: min(cpuLimit, gpuLimit x the highest vCPUs per GPU of its types), since the GPU limit is
        reached soonest on the type with the most vCPUs per GPU; the managed group: maxSize x its largest type.
        """
        if self.gpu_limit is not None and self.cpu_limit is not None:
            per_gpu = max(node.vcpus / node.gpus for node in self.nodes)
            return min(self.cpu_limit, math.ceil(self.gpu_limit * per_gpu))
        assert self.max_nodes is not None
        return self.max_nodes * max(node.vcpus for node in self.nodes)

    @property
    def desired_slots(self) -> int:
        """Slots the managed group's desired nodes offer (its smallest instance type)."""
        assert self.desired_nodes is not None
        return min(node.slots for node in self.nodes) * self.desired_nodes


def _node(settings: StackSettings, sharing: GpuSharingSettings, instance_type: str) -> NodeCapacity:
    daemonsets = node_allocatable.daemonset_requests(
        gpu_metrics=settings.observability.gpu_metrics,
        node_repair=settings.observability.node_repair,
        mps=sharing.strategy == "mps",
    )
    gpus = gpu_catalog.gpu_count(instance_type)
    return NodeCapacity(
        instance_type=instance_type,
        gpus=gpus,
        vcpus=gpu_catalog.vcpus(instance_type),
        slots=slots(gpus, sharing.replicas),
        allocatable=node_allocatable.pod_allocatable(
            instance_type, max_pods=settings.gpu_nodes.max_pods, daemonsets=daemonsets
        ),
    )


def pool_capacity(settings: StackSettings, pool: NodePoolSettings) -> PoolCapacity:
    """A Karpenter pool's capacity, per instance type it may launch."""
    sharing = settings.sharing_for(pool)
    return PoolCapacity(
        name=pool.name,
        sharing=sharing,
        nodes=tuple(_node(settings, sharing, t) for t in pool.selected_instance_types),
        gpu_limit=pool.gpu_limit,
        cpu_limit=pool.cpu_limit,
    )


def managed_group_capacity(settings: StackSettings) -> PoolCapacity | None:
    """The managed GPU node group's capacity (the stack's sharing), None while the group is disabled."""
    group = settings.gpu_node_group
    if not group.enabled:
        return None
    sharing = settings.sharing_for(None)
    return PoolCapacity(
        name=MANAGED_GROUP_POOL,
        sharing=sharing,
        nodes=tuple(_node(settings, sharing, t) for t in group.instance_types),
        max_nodes=group.max_size,
        desired_nodes=group.desired_size,
    )


def managed_group_slots(settings: StackSettings) -> int:
    """Shared GPU slots the managed group's desired nodes offer (its smallest instance type), 0 if disabled."""
    group = managed_group_capacity(settings)
    return group.desired_slots if group is not None else 0


def karpenter_capacities(settings: StackSettings) -> tuple[PoolCapacity, ...]:
    """Every Karpenter pool's capacity, in config order (none while Karpenter is off)."""
    if not settings.karpenter.enabled:
        return ()
    return tuple(pool_capacity(settings, pool) for pool in settings.karpenter.node_pools)


def all_capacities(settings: StackSettings) -> tuple[PoolCapacity, ...]:
    """Every GPU pool's capacity: the managed group's first (while enabled), then each Karpenter pool's."""
    group = managed_group_capacity(settings)
    return (*([group] if group is not None else []), *karpenter_capacities(settings))
