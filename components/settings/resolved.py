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
(tests/settings/test_resolved.py).

Each pool also has one sharing kind (`slot_kind`) with what one slot gets (`slot`), worked out by
`components/settings/sharing_kinds.py`. The summary reads its pools' rows and figures here: capacity, warm
headroom, vCPU quotas, and per Karpenter pool its sessions' peaks, its week's node-hours and its nodes' lifetime
(their arithmetic: `components/facts/timetable.py`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from components.facts import gpu_catalog, node_allocatable, timetable
from components.settings.gpu import GpuNodeGroupSettings, GpuNodeSettings, GpuSharingSettings
from components.settings.hub import HubSettings
from components.settings.karpenter import TYPICAL_WARM_SLOT, KarpenterSettings, NodePoolSettings, WarmSlotShape
from components.settings.labs import LabSession, LabSettings
from components.settings.observability import ObservabilitySettings
from components.settings.sharing_kinds import SharingKind, SlotModel, isolation_of, mps_client_cap_mib, sharing_kind

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


def default_warm_slot_shape(nodes: Sequence[NodeCapacity]) -> WarmSlotShape:
    """The largest share up to a typical lab pod that lets every node of `nodes` hold all its slots."""
    cpu, memory = TYPICAL_WARM_SLOT.cpu_millicores, TYPICAL_WARM_SLOT.memory_mib
    for node in nodes:
        cpu = min(cpu, node.allocatable.cpu_millicores // node.slots // 50 * 50)  # round down to 50m
        memory = min(memory, node.allocatable.memory_mib // node.slots // 64 * 64)  # and to 64 MiB
    return WarmSlotShape(cpu_millicores=max(cpu, 10), memory_mib=max(memory, 16))


@dataclass(frozen=True)
class CapacityRow:
    """One pool and instance type as the summary's capacity table and the alarms read it."""

    pool: str
    instance_type: str
    physical_gpus: int
    sharing: str  # the sharing profile
    replicas: int
    schedulable_per_node: int
    schedulable_at_limit: int  # at the pool's nvidia.com/gpu limit (managed group: at maxSize)


@dataclass(frozen=True)
class WarmHeadroomRow:
    pool: str
    instance_type: str
    warm_slots: int
    slots_per_node: int
    nodes_held: int  # if Karpenter picks this instance type for the buffer: ceil(warm slots / slots per node)


@dataclass(frozen=True)
class QuotaNeed:
    """vCPUs one EC2 quota (Service Quotas, service code ec2) must allow for every pool to reach its limits."""

    code: str
    name: str
    vcpus: int


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
    capacity_types: tuple[str, ...] = ("on-demand",)  # how it may buy nodes: on-demand, spot

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
    def capacity_rows(self) -> tuple[CapacityRow, ...]:
        """One row per instance type: GPUs, slots per node and slots at the pool's limit."""
        return tuple(
            CapacityRow(
                self.name,
                node.instance_type,
                node.gpus,
                self.sharing.profile,
                self.replicas,
                node.slots,
                # gpuLimit counts physical GPUs; the NodePool's nvidia.com/gpu limit is gpuLimit x replicas.
                self.slots_at_limit(node),
            )
            for node in self.nodes
        )

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

    @property
    def warm_headroom_rows(self) -> tuple[WarmHeadroomRow, ...]:
        """Per instance type: the nodes its warm slots keep running (none without warm slots)."""
        warm = self.settings.warm_gpu_slots
        if warm <= 0:
            return ()
        return tuple(
            WarmHeadroomRow(self.name, node.instance_type, warm, node.slots, node.nodes_for(warm))
            for node in self.nodes
        )

    @functools.cached_property
    def held_slots(self) -> list[int]:
        """Slots the pool holds per local minute of the week: warm slots plus each session in its window."""
        return timetable.held_profile(self.settings.warm_gpu_slots, self.sessions, self.lead_minutes)

    @property
    def session_peaks(self) -> tuple[timetable.SessionPeak, ...]:
        """Per session it serves: the peak slots in the session's windows and the nodes and vCPUs they take."""
        if not self.sessions:
            return ()
        return timetable.session_peaks(self.held_slots, self.sessions, self.lead_minutes, self.nodes)

    @property
    def week(self) -> timetable.PoolWeek | None:
        """Its GPU node-hours a week, timetable vs around the clock (None: it serves no session)."""
        return timetable.pool_week(self.name, self.held_slots, self.nodes) if self.sessions else None

    @property
    def lifetime(self) -> timetable.NodeLifetime:
        """The longest one of its nodes can live (expireAfter + terminationGracePeriod), and why."""
        pool = self.settings
        return timetable.node_lifetime(
            self.name, pool.expire_after, pool.termination_grace_period, self.node_hold_seconds
        )


@dataclass(frozen=True)
class ResolvedStack:
    """Every GPU pool of a stack, resolved once: the managed group's (while enabled), then each Karpenter pool's."""

    managed_group: ResolvedPool | None
    karpenter_pools: tuple[KarpenterPool, ...]  # in config order; none while Karpenter is off
    lab_gpu_slots: int = 0  # the labs' gpuSlots together (their ResourceQuotas)

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

    @property
    def capacity_rows(self) -> tuple[CapacityRow, ...]:
        return tuple(row for pool in self.pools for row in pool.capacity_rows)

    @property
    def slot_ceilings(self) -> dict[str, int]:
        """Most `nvidia.com/gpu` slots each pool can ever advertise, by name (the managed group: its largest type
        at maxSize, an upper bound: the group may launch any of its types)."""
        return {pool.name: pool.slot_limit for pool in sorted(self.pools, key=lambda pool: pool.name)}

    @property
    def max_slots(self) -> int:
        """Shared GPU slots the pools can ever provide: every pool at its limit, the managed group at maxSize."""
        return sum(self.slot_ceilings.values())

    @property
    def lab_slot_warning(self) -> str | None:
        """A warning when the labs together may hold more slots than the GPU pools can ever provide."""
        if self.lab_gpu_slots <= self.max_slots:
            return None
        return (
            f"WARNING: the labs' gpuSlots add up to {self.lab_gpu_slots}, but the GPU pools can provide at most "
            f"{self.max_slots} shared slots (pool gpuLimit x sharing replicas, managed group maxSize x GPUs x "
            "replicas); some quota can never be used at once"
        )

    @property
    def warm_headroom_rows(self) -> tuple[WarmHeadroomRow, ...]:
        return tuple(row for pool in self.karpenter_pools for row in pool.warm_headroom_rows)

    @property
    def quota_needs(self) -> tuple[QuotaNeed, ...]:
        """vCPUs each EC2 quota must allow for every pool to reach its limits (`quota_vcpus`), sorted by code: a
        pool counts against the On-Demand quotas if it allows on-demand, the Spot ones if it allows spot."""
        totals: dict[tuple[str, str], int] = {}
        for pool in self.pools:
            for purchase in sorted(set(pool.capacity_types)):
                for family_class in sorted({gpu_catalog.family_class(node.instance_type) for node in pool.nodes}):
                    key = (purchase, family_class)
                    totals[key] = totals.get(key, 0) + pool.quota_vcpus
        needs = [QuotaNeed(*gpu_catalog.VCPU_QUOTAS[key], vcpus=total) for key, total in totals.items()]
        return tuple(sorted(needs, key=lambda need: need.code))

    @property
    def session_peaks(self) -> tuple[timetable.SessionPeak, ...]:
        return tuple(peak for pool in self.karpenter_pools for peak in pool.session_peaks)

    @property
    def weeks(self) -> tuple[timetable.PoolWeek, ...]:
        return tuple(pool.week for pool in self.karpenter_pools if pool.week is not None)

    @property
    def node_lifetimes(self) -> tuple[timetable.NodeLifetime, ...]:
        return tuple(pool.lifetime for pool in self.karpenter_pools)


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
        capacity_types=tuple(pool.capacity_types),
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
            capacity_types=("spot",) if gpu_node_group.capacity_type == "SPOT" else ("on-demand",),
        )
    pools = karpenter.node_pools if karpenter.enabled else []
    return ResolvedStack(
        managed_group=group,
        karpenter_pools=tuple(
            _karpenter_pool(index, pool, gpu_sharing, inputs, labs, karpenter) for index, pool in enumerate(pools)
        ),
        lab_gpu_slots=sum(lab.gpu_slots for lab in labs),
    )
