"""The resolved model: every GPU pool worked out once from the settings sections, one frozen object each.

`resolve` takes the sections (never `StackSettings`, which calls it once and keeps the result as
`StackSettings.resolved`); the checks, renderers, components, the summary and the alarms read its attributes
rather than working a pool's facts out again.

Per pool (a Karpenter NodePool, or the managed GPU group) and per instance type it may launch: physical GPUs
and vCPUs (`components/facts/gpu_catalog.py`), shared `nvidia.com/gpu` slots per node (GPUs x sharing replicas:
`slots` is the one place that product is taken), what one node offers pods once the DaemonSets that run there
are placed (`components/facts/node_allocatable.py`), how many nodes hold a number of slots and whether they stay within
the pool's limits, the default warm slot shape, and the vCPUs the pool can count against EC2 quotas. A Karpenter
pool (`KarpenterPool`) adds its warm slot shape, the lab sessions it serves (a session's nodePool, else the only
pool), the lead time its buffer is raised by and how long a node must keep a session's or a hub's pod alive.

The settings checks (warm headroom, timetables, hubs, the fit model), the NodeOverlays, the device plugin's slots, the warm
headroom, the quota, the alarms and the synth summary read it; nothing else multiplies GPUs by replicas
(tests/settings/test_capacity.py).

Each pool also has one sharing kind (`slot_kind`: time-slicing, mps, g6f or exclusive) with what one slot gets:
its GPU memory and what is isolated from the other slots (`SlotModel`, docs/sharing-kinds.md). The hub
profiles, the summary, the NodeOverlays, the cost forecast and the GPU-idle reaper read the kind here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from components.facts import gpu_catalog, node_allocatable, timetable
from components.settings.gpu import GpuNodeGroupSettings, GpuNodeSettings, GpuSharingSettings
from components.settings.hub import HubSettings
from components.settings.karpenter import TYPICAL_WARM_SLOT, KarpenterSettings, NodePoolSettings, WarmSlotShape
from components.settings.labs import LabSession, LabSettings
from components.settings.observability import ObservabilitySettings

# The name the managed GPU node group goes by where pools are listed (summary, dashboards).
MANAGED_GROUP_POOL = "managed-gpu-group"

SharingKind = Literal["time-slicing", "mps", "g6f", "exclusive"]
# An MPS client below this cap cannot load a CUDA context and a small model (the settings rule's floor).
MPS_MIN_CLIENT_MIB: Final = 1024


def mps_client_cap_mib(gpu_memory_mib: int, replicas: int) -> int:
    """The MPS pinned-memory cap per client: the GPU's memory / replicas, in whole MiB.

    As the plugin's control daemon works it out (`fmt.Sprintf("%vM", totalMemory/replicas/1024/1024)` sent as
    `set_default_device_pinned_mem_limit <index> <limit>`): NVIDIA/k8s-device-plugin v0.20.0
    cmd/mps-control-daemon/mps/daemon.go, perDevicePinnedDeviceMemoryLimits.
    """
    return gpu_memory_mib // replicas


def sharing_kind(sharing: GpuSharingSettings, instance_types: Sequence[str]) -> SharingKind:
    """A pool's sharing kind: g6f where its types are g6f slices (the settings allow only strategy none there),
    else its strategy, `none` being exclusive."""
    if instance_types and all(gpu_catalog.is_fractional(t) for t in instance_types):
        return "g6f"
    return "exclusive" if sharing.strategy == "none" else sharing.strategy


@dataclass(frozen=True)
class Isolation:
    """What one slot keeps to itself. memory: no other slot can take its GPU memory (a cap or its own
    framebuffer); faults: another slot's fatal GPU fault does not end it; compute: its share of the GPU's
    cores is its own (not time-shared with, nor capped among, other processes on the same GPU)."""

    memory: bool
    faults: bool
    compute: bool

    def describe(self) -> str:
        parts = [("memory", self.memory), ("faults", self.faults), ("compute", self.compute)]
        fenced = [name for name, held in parts if held]
        shared = [name for name, held in parts if not held]
        return f"isolated: {', '.join(fenced) or 'none'}; shared: {', '.join(shared) or 'none'}"


def isolation_of(kind: SharingKind) -> Isolation:
    """Per kind (docs/sharing-kinds.md cites each): time-slicing fences nothing; MPS caps each client's memory,
    but a fatal fault ends every client of that GPU's MPS server and the SMs are shared (a thread-percentage cap
    only); a g6f slice has its own framebuffer and vGPU; an exclusive GPU is the pod's alone."""
    if kind == "time-slicing":
        return Isolation(memory=False, faults=False, compute=False)
    if kind == "mps":
        return Isolation(memory=True, faults=False, compute=False)
    return Isolation(memory=True, faults=True, compute=True)


@dataclass(frozen=True)
class SlotModel:
    """One slot of a pool: its kind, the GPU memory it gets (smallest over the pool's types) and its isolation.

    `memory_mib` is a fair share with time-slicing (nothing enforces it), the MPS client cap with mps, the
    slice's framebuffer on g6f and the whole GPU exclusive.
    """

    kind: SharingKind
    memory_mib: int
    replicas: int
    isolation: Isolation

    @property
    def memory_capped(self) -> bool:
        return self.kind != "time-slicing"

    @property
    def per_process_gpu_samples(self) -> bool:
        """Whether DCGM's per-process GPU samples show one slot's use: not under MPS (the server holds the
        context) nor on a g6f guest (vGPU); a reaper must report "unknown" there and never reclaim."""
        return self.kind in ("time-slicing", "exclusive")


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


def default_warm_slot_shape(nodes: Sequence[NodeCapacity]) -> WarmSlotShape:
    """The largest share up to a typical lab pod that lets every node of `nodes` hold all its slots."""
    cpu, memory = TYPICAL_WARM_SLOT.cpu_millicores, TYPICAL_WARM_SLOT.memory_mib
    for node in nodes:
        cpu = min(cpu, node.allocatable.cpu_millicores // node.slots // 50 * 50)  # round down to 50m
        memory = min(memory, node.allocatable.memory_mib // node.slots // 64 * 64)  # and to 64 MiB
    return WarmSlotShape(cpu_millicores=max(cpu, 10), memory_mib=max(memory, 16))


@dataclass(frozen=True, kw_only=True)
class ResolvedPool:
    """A GPU pool: its sharing, one `NodeCapacity` per instance type it may launch, and its limits.

    A Karpenter pool (`KarpenterPool`) is bounded by gpuLimit (physical GPUs) and cpuLimit (vCPUs); the managed
    group by maxSize.
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

    @property
    def slot_kind(self) -> SharingKind:
        """The pool's sharing kind: g6f for fractional types (always strategy none), else its strategy."""
        return sharing_kind(self.sharing, [node.instance_type for node in self.nodes])

    @property
    def slot(self) -> SlotModel:
        """What one slot of this pool gets, on its smallest GPU."""
        gpu_memory = min(gpu_catalog.gpu_memory_mib(node.instance_type) for node in self.nodes)
        kind = self.slot_kind
        # MPS: the daemon's cap; time-slicing: a fair share nothing enforces; g6f and exclusive: the whole device.
        per_slot = mps_client_cap_mib(gpu_memory, self.replicas) if kind == "mps" else gpu_memory // self.replicas
        return SlotModel(kind=kind, memory_mib=per_slot, replicas=self.replicas, isolation=isolation_of(kind))

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


@dataclass(frozen=True, kw_only=True)
class KarpenterPool(ResolvedPool):
    """A Karpenter pool with what the timetable, the warm headroom and the hubs read of it."""

    settings: NodePoolSettings
    index: int  # its place in karpenter.nodePools (the key paths of the checks)
    warm_slot_shape: WarmSlotShape  # its setting, else the default shape (`default_warm_slot_shape`)
    sessions: tuple[timetable.Session, ...]  # every lab session it serves, in config order
    lead_minutes: int  # how long before a session its buffer is raised: the modelled time to GPU, rounded up
    session_hold_seconds: int  # the longest a node must keep one session pod alive (0: no session)
    node_hold_seconds: int  # the longest a node must keep one lab pod alive: a session's or a hub notebook's

    @property
    def key(self) -> str:
        return f"karpenter.nodePools.{self.index}"


@dataclass(frozen=True)
class ResolvedStack:
    """Every GPU pool of a stack, resolved once: the managed group's (while enabled), then each Karpenter pool's."""

    managed_group: ResolvedPool | None
    karpenter_pools: tuple[KarpenterPool, ...]  # in config order; none while Karpenter is off

    @property
    def pools(self) -> tuple[ResolvedPool, ...]:
        return (*([self.managed_group] if self.managed_group is not None else []), *self.karpenter_pools)

    @property
    def managed_group_slots(self) -> int:
        """Shared GPU slots the managed group's desired nodes offer (its smallest instance type), 0 if disabled."""
        return self.managed_group.desired_slots if self.managed_group is not None else 0

    def pool(self, name: str) -> KarpenterPool:
        return next(pool for pool in self.karpenter_pools if pool.name == name)

    def hub_pools(self, hub: HubSettings) -> tuple[KarpenterPool, ...]:
        """The Karpenter pools a lab's hub offers as GPU profiles (its `pools`, else every pool), in config order."""
        return tuple(pool for pool in self.karpenter_pools if hub.pools is None or pool.name in hub.pools)

    @property
    def timetabled(self) -> tuple[KarpenterPool, ...]:
        """The Karpenter pools that serve a lab session."""
        return tuple(pool for pool in self.karpenter_pools if pool.sessions)


def session_pool(karpenter: KarpenterSettings, session: LabSession) -> NodePoolSettings | None:
    """The Karpenter pool a session warms: its nodePool, else the stack's only pool (None: unresolved)."""
    pools = karpenter.node_pools if karpenter.enabled else []
    if session.node_pool is None:
        return pools[0] if len(pools) == 1 else None
    return next((pool for pool in pools if pool.name == session.node_pool), None)


def _sessions_on(karpenter: KarpenterSettings, labs: Sequence[LabSettings], pool: str) -> tuple[timetable.Session, ...]:
    found = []
    for i, lab in enumerate(labs):
        for j, session in enumerate(lab.sessions):
            served_by = session_pool(karpenter, session)
            if served_by is not None and served_by.name == pool:
                found.append(
                    timetable.Session(
                        lab=lab.name,
                        key=f"labs.{i}.sessions.{j}",
                        pool=pool,
                        schedule=session.schedule,
                        timezone=session.timezone,
                        duration_minutes=session.duration_minutes,
                        learners=session.learners,
                    )
                )
    return tuple(found)


@dataclass(frozen=True)
class _NodeInputs:
    """What every GPU node's allocatable depends on beyond its type and its pool's sharing."""

    gpu_nodes: GpuNodeSettings
    observability: ObservabilitySettings
    ebs_csi: bool

    def node(self, sharing: GpuSharingSettings, instance_type: str) -> NodeCapacity:
        daemonsets = node_allocatable.daemonset_requests(
            gpu_metrics=self.observability.gpu_metrics,
            node_repair=self.observability.node_repair,
            mps=sharing.strategy == "mps",
            ebs_csi=self.ebs_csi,
        )
        gpus = gpu_catalog.gpu_count(instance_type)
        return NodeCapacity(
            instance_type=instance_type,
            gpus=gpus,
            vcpus=gpu_catalog.vcpus(instance_type),
            slots=slots(gpus, sharing.replicas),
            allocatable=node_allocatable.pod_allocatable(
                instance_type, max_pods=self.gpu_nodes.max_pods, daemonsets=daemonsets
            ),
        )


def _karpenter_pool(
    index: int, pool: NodePoolSettings, stack_sharing: GpuSharingSettings, inputs: _NodeInputs,
    labs: Sequence[LabSettings], karpenter: KarpenterSettings,
) -> KarpenterPool:  # fmt: skip
    sharing = pool.gpu_sharing or stack_sharing
    nodes = tuple(inputs.node(sharing, t) for t in pool.selected_instance_types)
    gpu_nodes = inputs.gpu_nodes
    lead = timetable.lead_minutes_for(
        pre_pulls=bool(gpu_nodes.pre_pull_images), fast_image_pull=gpu_nodes.fast_image_pull
    )
    sessions = _sessions_on(karpenter, labs, pool.name)
    # A session pod may land from the lead time on and must live to the session's end.
    session_hold = max(((lead + s.duration_minutes) * 60 for s in sessions), default=0)
    hubs = [lab.hub for lab in labs if lab.hub is not None and (lab.hub.pools is None or pool.name in lab.hub.pools)]
    return KarpenterPool(
        name=pool.name,
        sharing=sharing,
        nodes=nodes,
        gpu_limit=pool.gpu_limit,
        cpu_limit=pool.cpu_limit,
        settings=pool,
        index=index,
        warm_slot_shape=pool.warm_slot_shape or default_warm_slot_shape(nodes),
        sessions=sessions,
        lead_minutes=lead,
        session_hold_seconds=session_hold,
        node_hold_seconds=max([session_hold, *(hub.max_seconds for hub in hubs)]),
    )


def resolve(
    *,
    karpenter: KarpenterSettings,
    gpu_node_group: GpuNodeGroupSettings,
    gpu_sharing: GpuSharingSettings,
    gpu_nodes: GpuNodeSettings,
    observability: ObservabilitySettings,
    labs: Sequence[LabSettings],
    ebs_csi: bool,
) -> ResolvedStack:
    """Every GPU pool of the stack from its sections; `ebs_csi`: the EBS CSI node DaemonSet runs on GPU nodes."""
    inputs = _NodeInputs(gpu_nodes, observability, ebs_csi)
    group = None
    if gpu_node_group.enabled:
        group = ResolvedPool(
            name=MANAGED_GROUP_POOL,
            sharing=gpu_sharing,
            nodes=tuple(inputs.node(gpu_sharing, t) for t in gpu_node_group.instance_types),
            max_nodes=gpu_node_group.max_size,
            desired_nodes=gpu_node_group.desired_size,
        )
    pools = karpenter.node_pools if karpenter.enabled else []
    return ResolvedStack(
        managed_group=group,
        karpenter_pools=tuple(
            _karpenter_pool(index, pool, gpu_sharing, inputs, labs, karpenter) for index, pool in enumerate(pools)
        ),
    )
