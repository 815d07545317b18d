"""The fit model: every pod the plan runs, placed on the node group it may run on, measured against allocatable.

Node groups: the system node group at its fixed size (desiredSize nodes of its smallest type: nothing scales
it), the CPU user pool and each GPU pool by its instance types (Karpenter launches a type that holds the pod),
and the managed GPU group. A node's allocatable is Karpenter's model (`components/facts/node_allocatable.py`);
a group runs the DaemonSets whose placement terms take its nodes (`pod_requests.can_run`). Every other pod goes
where its nodeSelector, affinity and tolerations let it: onto the system nodes when they can take it (they are
the only nodes at creation, so they must hold all of those: first-fit by size, one per node where the pod
asks), else it must fit one node of some pool that takes it. A pod that fits nowhere is a config error naming
the group's key (`check`, run by the settings checks before any resource). Pure: settings and facts only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from components.facts import gpu_catalog, node_allocatable, pod_requests
from components.facts.constants import (
    EKS_NODE_GROUP_LABEL_KEY,
    GPU_TAINT,
    NODEPOOL_LABEL,
    OS_LABEL,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    USER_NODE_LABEL_KEY,
    USER_NODE_LABEL_VALUE,
    USER_TAINT,
    USER_TOLERATION,
    gpu_node_labels,
)
from components.facts.node_allocatable import NO_REQUEST, Allocatable
from components.facts.pod_requests import PodShape
from components.settings.resolved import KarpenterPool
from components.settings.stack import StackSettings

Labels = Mapping[str, str]


@dataclass(frozen=True)
class NodeGroup:
    """Nodes alike for the scheduler: same labels, taints and instance types."""

    name: str
    key: str  # the key path a misfit names (without `gpu-platform:`)
    instance_types: tuple[str, ...]
    labels: Labels
    taints: tuple[Labels, ...]
    max_pods: int
    fixed_nodes: int | None  # a managed node group's desiredSize; None for a Karpenter pool
    packed: bool = False  # the system group: every pod it can take is placed on its fixed nodes

    def allocatable(self, instance_type: str) -> Allocatable:
        """One node's allocatable before DaemonSets (Karpenter's formula)."""
        return node_allocatable.pod_allocatable(instance_type, max_pods=self.max_pods, daemonsets=NO_REQUEST)

    @property
    def smallest(self) -> str:
        return min(self.instance_types, key=lambda t: (gpu_catalog.vcpus(t), gpu_catalog.memory_mib(t), t))


@dataclass(frozen=True)
class Placed:
    """A pod the plan runs and the key path of the setting that creates it."""

    pod: PodShape
    key: str


def node_groups(settings: StackSettings) -> tuple[NodeGroup, ...]:
    """The system group, the CPU user pool (while it exists), each GPU pool, the managed GPU group."""
    system = settings.system_nodes
    groups = [
        NodeGroup(
            "system",
            "systemNodes.instanceTypes",
            tuple(system.instance_types),
            {
                OS_LABEL: "linux",
                SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE,
                EKS_NODE_GROUP_LABEL_KEY: f"{settings.cluster_name}-system",
            },
            (),
            node_allocatable.SYSTEM_MAX_PODS,
            system.desired_size,
            packed=True,
        )
    ]
    cpu = settings.karpenter.cpu_user_pool
    if settings.cpu_user_pool_enabled:
        labels = {OS_LABEL: "linux", USER_NODE_LABEL_KEY: USER_NODE_LABEL_VALUE, NODEPOOL_LABEL: cpu.name}
        groups.append(
            NodeGroup(
                cpu.name,
                "karpenter.cpuUserPool.instanceTypes",
                tuple(cpu.instance_types),
                labels,
                (dict(USER_TAINT),),
                node_allocatable.CPU_USER_MAX_PODS,
                None,
            )
        )
    for pool in settings.resolved.karpenter_pools:
        labels = {OS_LABEL: "linux", **gpu_node_labels(pool.sharing.profile), NODEPOOL_LABEL: pool.name}
        groups.append(
            NodeGroup(
                pool.name,
                f"{pool.key}.instanceTypes",
                pool.settings.selected_instance_types,
                labels,
                (dict(GPU_TAINT),),
                settings.gpu_nodes.max_pods,
                None,
            )
        )
    group = settings.gpu_node_group
    if group.enabled:
        labels = {OS_LABEL: "linux", **gpu_node_labels(settings.gpu_sharing.profile)}
        groups.append(
            NodeGroup(
                "managed-gpu-group",
                "gpuNodeGroup.instanceTypes",
                tuple(group.instance_types),
                labels,
                (dict(GPU_TAINT),),
                settings.gpu_nodes.max_pods,
                group.desired_size,
            )
        )
    return tuple(groups)


def daemonsets(settings: StackSettings) -> tuple[PodShape, ...]:
    """Every DaemonSet the plan runs (on the nodes its placement terms take)."""
    found = [pod_requests.KUBE_PROXY, pod_requests.AWS_NODE, pod_requests.POD_IDENTITY_AGENT]
    if settings.observability.gpu_metrics:
        found += [pod_requests.CLOUDWATCH_AGENT, pod_requests.DCGM_EXPORTER]
    if settings.observability.node_repair:
        found += [pod_requests.NODE_MONITORING_AGENT, pod_requests.DCGM_SERVER]
    for sharing in settings.sharing_profiles:
        found += pod_requests.device_plugin(sharing.profile, mps=sharing.strategy == "mps")
    if any(lab.hub is not None for lab in settings.labs):
        found.append(pod_requests.EFS_CSI_NODE)
    if settings.ebs_csi_driver_enabled:
        found.append(pod_requests.EBS_CSI_NODE)
    return tuple(found)


def workloads(settings: StackSettings) -> tuple[Placed, ...]:
    """Every pod that is not a DaemonSet's, with the key of the setting that creates it."""
    found: list[Placed] = [Placed(pod_requests.COREDNS, "systemNodes.instanceTypes")]
    if settings.karpenter.enabled:
        found.append(
            Placed(pod_requests.KARPENTER_CONTROLLER.with_count(settings.karpenter.replicas), "karpenter.replicas")
        )
    if settings.observability.gpu_metrics:
        found.append(Placed(pod_requests.CLOUDWATCH_OPERATOR, "observability.gpuMetrics"))
    timetabled = settings.resolved.timetabled
    if timetabled:
        found.append(Placed(pod_requests.TIMETABLE_JOB.with_count(len(timetabled)), "labs"))
    if settings.demo.enabled:
        found.append(Placed(pod_requests.DEMO_POD.with_count(settings.demo.replicas), "demo.replicas"))
    for pool in settings.resolved.karpenter_pools:
        if pool.settings.warm_gpu_slots:
            warm = gpu_notebook(
                pool, name=f"warm slot ({pool.name})", source="renderers/karpenter/warm_headroom_manifests.py"
            )
            found.append(Placed(warm, f"{pool.key}.warmGpuSlots"))
    hubs = [(index, lab.hub) for index, lab in enumerate(settings.labs) if lab.hub is not None]
    if hubs:
        found.append(Placed(pod_requests.EFS_CSI_CONTROLLER, "labs"))
    if settings.ebs_csi_driver_enabled:
        found.append(Placed(pod_requests.EBS_CSI_CONTROLLER, "labs"))
    for index, hub in hubs:
        key = f"labs.{index}.hub"
        found += [Placed(pod_requests.HUB, key), Placed(pod_requests.PROXY, key), Placed(cpu_notebook(), key)]
        found += [Placed(gpu_notebook(pool), f"{key}.pools") for pool in settings.resolved.hub_pools(hub)]
    return tuple(found)


def cpu_notebook() -> PodShape:
    """The hub's CPU profile: the CPU user pool's label and toleration (renderers/hub/hub_profiles.py)."""
    return PodShape(
        "notebook (cpu profile)",
        pod_requests.CPU_NOTEBOOK_REQUESTS,
        "renderers/hub/hub_profiles.py",
        node_selector={USER_NODE_LABEL_KEY: USER_NODE_LABEL_VALUE},
        tolerations=(dict(USER_TOLERATION),),
    )


def gpu_notebook(pool: KarpenterPool, *, name: str = "", source: str = "renderers/hub/hub_profiles.py") -> PodShape:
    """A GPU profile's notebook (and a warm slot of the pool): the pool's warm-slot shape, pinned to the pool."""
    shape = pool.warm_slot_shape
    return PodShape(
        name or f"notebook (gpu-{pool.name})",
        Allocatable(shape.cpu_millicores, shape.memory_mib),
        source,
        node_selector={NODEPOOL_LABEL: pool.name},
        tolerations=(dict(pod_requests.GPU_TOLERATION),),
    )
