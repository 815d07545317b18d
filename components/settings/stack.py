"""`StackSettings`: every section of one stack, and the views derived from them (a pool's sharing, its
sessions, the images GPU nodes pre-pull). The rules across sections live in `components/settings/rules*.py`."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, model_validator

from components.facts import node_allocatable, timetable
from components.settings import capacity, rules
from components.settings.cluster import ClusterSettings, NetworkSettings, SystemNodeGroupSettings
from components.settings.fields import ClusterName, KubernetesVersion, Region, SettingsModel, TagKey, TagValue
from components.settings.gpu import GpuNodeGroupSettings, GpuNodeSettings, GpuSharingSettings
from components.settings.hub import HubSettings
from components.settings.karpenter import KarpenterSettings, NodePoolSettings, WarmSlotShape
from components.settings.labs import DemoSettings, LabSession, LabSettings
from components.settings.observability import ObservabilitySettings


class StackSettings(SettingsModel):
    """Everything one stack configures. Field aliases are the `gpu-platform:<key>` names."""

    region: Region  # from aws:region
    """Where everything is created (read from `aws:region`)."""
    cluster_name: ClusterName
    """EKS cluster name, Karpenter discovery tag value, prefix of IAM and SQS names."""
    kubernetes_version: KubernetesVersion
    """EKS Kubernetes minor version (standard support only)."""
    protect_resources: bool = False
    """Protect the cluster, VPC, KMS key and interruption queue; EKS deletion protection."""
    tags: dict[TagKey, TagValue] = {}
    """Tags on every AWS resource and GPU instance and volume."""
    network: NetworkSettings = NetworkSettings()
    """The VPC: created, or an existing one."""
    cluster: ClusterSettings = ClusterSettings()
    """The EKS control plane and who may use it."""
    system_nodes: SystemNodeGroupSettings = SystemNodeGroupSettings()
    """The system node group (Karpenter, CoreDNS)."""
    gpu_nodes: GpuNodeSettings = GpuNodeSettings()
    """How every GPU node is built, whoever launches it (Karpenter's EC2NodeClass, the managed group)."""
    gpu_node_group: GpuNodeGroupSettings = GpuNodeGroupSettings()
    """Only the EKS managed GPU node group; Karpenter's GPU capacity is set per pool."""
    karpenter: KarpenterSettings = KarpenterSettings()
    """Karpenter and its GPU node pools."""
    gpu_sharing: GpuSharingSettings = GpuSharingSettings()
    """How pods share a GPU: the stack default, which a pool may override."""
    demo: DemoSettings = DemoSettings()
    """The learning-lab demo workload."""
    observability: ObservabilitySettings = ObservabilitySettings()
    """GPU health signals and repair, GPU metrics, dashboard and alarms."""
    labs: Annotated[list[LabSettings], Field(max_length=50)] = []
    """Learning labs: a namespace each, with its quota, policies and members' access."""

    def sharing_for(self, pool: NodePoolSettings | None) -> GpuSharingSettings:
        """Sharing of one Karpenter pool (its override, else the stack default); None = managed group."""
        return pool.gpu_sharing if pool is not None and pool.gpu_sharing else self.gpu_sharing

    # --- capacity (components/settings/capacity.py: the one capacity model) ---

    def capacity_of(self, pool: NodePoolSettings) -> capacity.PoolCapacity:
        """The pool's capacity model: per instance type its GPUs, vCPUs, slots and allocatable."""
        return capacity.pool_capacity(self, pool)

    def warm_slot_shape_for(self, pool: NodePoolSettings) -> WarmSlotShape:
        """One warm slot's CPU and memory: the pool's setting, else the largest share up to a typical lab pod
        that lets every node of the pool hold all its slots (GPUs x replicas) after system reservations."""
        if pool.warm_slot_shape is not None:
            return pool.warm_slot_shape
        return self.capacity_of(pool).default_warm_slot_shape()

    def pool_node_allocatable(self, pool: NodePoolSettings, instance_type: str) -> node_allocatable.Allocatable:
        """What one node of this pool offers pods once the DaemonSets these settings run on it are placed."""
        return self.capacity_of(pool).node(instance_type).allocatable

    def slots_per_node(self, pool: NodePoolSettings, instance_type: str) -> int:
        """Shared `nvidia.com/gpu` slots one node of this type offers in this pool (GPUs x replicas)."""
        return self.capacity_of(pool).node(instance_type).slots

    # --- the lab timetable (components/facts/timetable.py, docs/timetable.md) ---

    def session_pool(self, session: LabSession) -> NodePoolSettings | None:
        """The Karpenter pool a session warms: its nodePool, else the stack's only pool (None: unresolved)."""
        pools = self.karpenter.node_pools if self.karpenter.enabled else []
        if session.node_pool is None:
            return pools[0] if len(pools) == 1 else None
        return next((pool for pool in pools if pool.name == session.node_pool), None)

    def sessions_on(self, pool: NodePoolSettings) -> tuple[timetable.Session, ...]:
        """Every lab session this pool serves, in config order."""
        found = []
        for i, lab in enumerate(self.labs):
            for j, session in enumerate(lab.sessions):
                served_by = self.session_pool(session)
                if served_by is not None and served_by.name == pool.name:
                    found.append(
                        timetable.Session(
                            lab=lab.name,
                            key=f"labs.{i}.sessions.{j}",
                            pool=pool.name,
                            schedule=session.schedule,
                            timezone=session.timezone,
                            duration_minutes=session.duration_minutes,
                            learners=session.learners,
                        )
                    )
        return tuple(found)

    def timetable_lead_minutes(self, pool: NodePoolSettings) -> int:
        """How long before a session the pool's buffer is raised: the modelled time to GPU, rounded up."""
        nodes = self.gpu_nodes
        return timetable.lead_minutes_for(pre_pulls=bool(nodes.pre_pull_images), fast_image_pull=nodes.fast_image_pull)

    def session_hold_seconds(self, pool: NodePoolSettings) -> int:
        """The longest a node of this pool must keep one session pod alive (0: the pool serves no session).

        The one place this is computed: a session pod may land from the lead time on and must live to the
        session's end. A hub's notebooks are held for their maximum server age: `node_hold_seconds`.
        """
        lead = self.timetable_lead_minutes(pool)
        return max(((lead + s.duration_minutes) * 60 for s in self.sessions_on(pool)), default=0)

    def node_hold_seconds(self, pool: NodePoolSettings) -> int:
        """The longest a node of this pool must keep one lab pod alive: a session's, or a hub notebook's max age."""
        hubs = [lab.hub for lab in self.labs if lab.hub is not None and pool in self.hub_pools(lab.hub)]
        return max([self.session_hold_seconds(pool), *(hub.max_seconds for hub in hubs)])

    @property
    def sharing_profiles(self) -> tuple[GpuSharingSettings, ...]:
        """Distinct sharing setups in use, one device-plugin DaemonSet each, sorted by profile name."""
        used: dict[str, GpuSharingSettings] = {}
        if self.gpu_node_group.enabled:
            used[self.gpu_sharing.profile] = self.gpu_sharing
        if self.karpenter.enabled:
            for pool in self.karpenter.node_pools:
                sharing = self.sharing_for(pool)
                used[sharing.profile] = sharing
        return tuple(used[k] for k in sorted(used))

    @property
    def gpu_instance_types(self) -> tuple[str, ...]:
        types = set(self.gpu_node_group.instance_types) if self.gpu_node_group.enabled else set()
        if self.karpenter.enabled:
            for pool in self.karpenter.node_pools:
                types.update(pool.selected_instance_types)
        return tuple(sorted(types))

    @property
    def hub_images(self) -> tuple[str, ...]:
        """Notebook images of the labs' hubs (each once, sorted)."""
        return tuple(sorted({lab.hub.image for lab in self.labs if lab.hub is not None}))

    @property
    def gpu_node_bootstrap(self) -> GpuNodeSettings:
        """`gpuNodes` as GPU node userData uses it: hub notebook images join the pre-pull list automatically,
        so a notebook on a warm slot starts without a pull."""
        images = list(dict.fromkeys([*self.gpu_nodes.pre_pull_images, *self.hub_images]))
        return self.gpu_nodes.model_copy(update={"pre_pull_images": images})

    @property
    def ebs_csi_driver_enabled(self) -> bool:
        """The EBS CSI add-on runs (its node DaemonSet on every node): some hub keeps its database on a volume."""
        return any(lab.hub is not None and lab.hub.database == "sqliteVolume" for lab in self.labs)

    @property
    def cpu_user_pool_enabled(self) -> bool:
        """The CPU user pool exists: Karpenter is on and some lab has a hub (its CPU profile runs there)."""
        return self.karpenter.enabled and any(lab.hub is not None for lab in self.labs)

    def hub_pools(self, hub: HubSettings) -> tuple[NodePoolSettings, ...]:
        """The Karpenter pools a lab's hub offers as GPU profiles (its `pools`, else every pool), in config order."""
        if not self.karpenter.enabled:
            return ()
        wanted = hub.pools
        return tuple(p for p in self.karpenter.node_pools if wanted is None or p.name in wanted)

    @model_validator(mode="after")
    def _sections_fit_together(self) -> Self:
        rules.check_stack(self)
        return self
