"""What each pod the plan runs asks the scheduler for, and where it may run: the fit model's requests table.

One `PodShape` per workload: its requests (cpu, memory: what the scheduler counts), how many pods, and the
placement terms the scheduler matches against a node (nodeSelector, required node affinity, tolerations,
one per node). Shapes of objects this program renders are the values its renderers use (they read them from
here or from `node_allocatable`; tests/settings/test_fit_plan.py cross-checks every one against the synthesized plan);
the add-ons' and charts' own are cited at their pinned versions. An unset request counts 0, as the scheduler
counts it. Pure: facts only, no settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from components.facts import node_allocatable as na
from components.facts import quantity
from components.facts.constants import (
    DEMO_POD_REQUESTS,
    GPU_LABEL_KEY,
    GPU_LABEL_VALUE,
    GPU_TAINT,
    GPU_TOLERATION,
    NODEPOOL_LABEL,
    OS_LABEL,
    SHARING_PROFILE_LABEL_KEY,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
)
from components.facts.node_allocatable import Allocatable

Toleration = Mapping[str, str]
# One required node-affinity term: every expression must hold (key, In | NotIn | Exists | DoesNotExist, values).
Expression = tuple[str, str, tuple[str, ...]]

TOLERATE_ALL: Final[tuple[Toleration, ...]] = ({"operator": "Exists"},)
CRITICAL_ADDONS_ONLY: Final[Toleration] = {"key": "CriticalAddonsOnly", "operator": "Exists"}
SYSTEM_SELECTOR: Final = {OS_LABEL: "linux", SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE}
SYSTEM_NODES_ONLY: Final = {SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE}
NOT_KARPENTER: Final[tuple[Expression, ...]] = ((NODEPOOL_LABEL, "DoesNotExist", ()),)


@dataclass(frozen=True)
class PodShape:
    """One workload's pods: what each requests and which nodes may take them."""

    name: str
    requests: Allocatable
    source: str  # where the request comes from: a renderer of this program, or repo + path @ pinned tag
    count: int = 1  # pods (a DaemonSet: per node)
    daemonset: bool = False
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: tuple[Expression, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    one_per_node: bool = False  # required pod anti-affinity on the hostname

    def with_count(self, count: int) -> PodShape:
        return replace(self, count=count)


def tolerates(tolerations: tuple[Toleration, ...], taint: Mapping[str, str]) -> bool:
    """Kubernetes' toleration match (k8s.io/api core/v1 toleration.go ToleratesTaint): an empty key with Exists
    matches every taint; an empty effect matches every effect; Exists ignores the value, Equal compares it."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if not t.get("key"):
            if t.get("operator") == "Exists":
                return True
            continue
        if t["key"] != taint["key"]:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _holds(expression: Expression, labels: Mapping[str, str]) -> bool:
    key, operator, values = expression
    if operator == "In":
        return labels.get(key) in values
    if operator == "NotIn":
        return labels.get(key) not in values
    if operator == "Exists":
        return key in labels
    return key not in labels  # DoesNotExist


def can_run(pod: PodShape, labels: Mapping[str, str], taints: tuple[Mapping[str, str], ...]) -> bool:
    """The scheduler's filters for one node: nodeSelector, required node affinity, NoSchedule taints tolerated."""
    return (
        all(labels.get(k) == v for k, v in pod.node_selector.items())
        and all(_holds(e, labels) for e in pod.affinity)
        and all(tolerates(pod.tolerations, taint) for taint in taints if taint["effect"] != "PreferNoSchedule")
    )


# --- DaemonSets --------------------------------------------------------------------------------------
# kube-proxy, aws-node and eks-pod-identity-agent tolerate every taint (`- operator: Exists`: the EKS add-on
# manifests, aws/eks-charts stable/aws-vpc-cni values.yaml @ chart 1.22.4, aws/eks-pod-identity-agent
# charts/eks-pod-identity-agent/values.yaml @ v0.1.37); requests in node_allocatable.
KUBE_PROXY: Final = PodShape(
    "kube-proxy", na.KUBE_PROXY, "EKS kube-proxy add-on", daemonset=True, tolerations=TOLERATE_ALL
)
AWS_NODE: Final = PodShape(
    "aws-node", na.AWS_NODE, "aws/eks-charts aws-vpc-cni 1.22.4", daemonset=True, tolerations=TOLERATE_ALL
)
POD_IDENTITY_AGENT: Final = PodShape(
    "eks-pod-identity-agent",
    na.POD_IDENTITY_AGENT,
    "aws/eks-pod-identity-agent v0.1.37",
    daemonset=True,
    tolerations=TOLERATE_ALL,
)
# The CloudWatch agent: the add-on's root `tolerations`, which this program sets to `operator: Exists`
# (renderers/observability/observability_config.py); the node monitoring agent's `nodeAgent.tolerations` likewise.
CLOUDWATCH_AGENT: Final = PodShape(
    "cloudwatch-agent",
    na.CLOUDWATCH_AGENT,
    "amazon-cloudwatch-observability 6.4.0 agent.resources",
    daemonset=True,
    tolerations=TOLERATE_ALL,
)
NODE_MONITORING_AGENT: Final = PodShape(
    "eks-node-monitoring-agent",
    na.NODE_MONITORING_AGENT,
    "eks-node-monitoring-agent v1.6.6 nodeAgent.resources",
    daemonset=True,
    tolerations=TOLERATE_ALL,
)
_GPU_NODES: Final = {GPU_LABEL_KEY: GPU_LABEL_VALUE}
# dcgm-server: `dcgmAgent.resources: {}`, affinity NVIDIA instance types; modelled by the GPU label every NVIDIA
# node of this platform carries.
DCGM_SERVER: Final = PodShape(
    "dcgm-server",
    na.NODE_MONITORING_DCGM_SERVER,
    "eks-node-monitoring-agent v1.6.6 dcgmAgent.resources",
    daemonset=True,
    node_selector=_GPU_NODES,
    tolerations=(GPU_TOLERATION,),
)
DCGM_EXPORTER: Final = PodShape(
    "gpu-platform-dcgm-exporter",
    na.DCGM_EXPORTER,
    "renderers/observability/dcgm_exporter_manifests.py",
    daemonset=True,
    node_selector=_GPU_NODES,
    tolerations=(GPU_TOLERATION,),
)
# kubernetes-sigs/aws-efs-csi-driver charts/aws-efs-csi-driver/values.yaml @ v3.4.1 (chart 4.4.1, the add-on's
# v3.4.1): `node.resources: {}` and `controller.resources: {}` (no requests), the node DaemonSet tolerates every
# taint, the controller (2 replicas) only CriticalAddonsOnly and efs.csi.aws.com/agent-not-ready.
EFS_CSI_NODE: Final = PodShape(
    "efs-csi-node", na.NO_REQUEST, "aws-efs-csi-driver v3.4.1 node.resources", daemonset=True, tolerations=TOLERATE_ALL
)
EFS_CSI_CONTROLLER: Final = PodShape(
    "efs-csi-controller",
    na.NO_REQUEST,
    "aws-efs-csi-driver v3.4.1 controller.resources",
    count=2,
    tolerations=(CRITICAL_ADDONS_ONLY, {"key": "efs.csi.aws.com/agent-not-ready", "operator": "Exists"}),
)

# The EBS CSI add-on (the hubs' database volumes): node_allocatable.EBS_CSI_NODE / EBS_CSI_CONTROLLER cite the
# chart's requests; the node DaemonSet tolerates every taint, the controller (2 replicas) CriticalAddonsOnly and
# every NoExecute taint for 300 s.
EBS_CSI_NODE: Final = PodShape(
    "ebs-csi-node", na.EBS_CSI_NODE, "aws-ebs-csi-driver node.resources", daemonset=True, tolerations=TOLERATE_ALL
)
EBS_CSI_CONTROLLER: Final = PodShape(
    "ebs-csi-controller",
    na.EBS_CSI_CONTROLLER,
    "aws-ebs-csi-driver controller.resources",
    count=2,
    tolerations=(CRITICAL_ADDONS_ONLY, {"operator": "Exists", "effect": "NoExecute"}),  # for 300 s: placement alike
)


def device_plugin(profile: str, *, mps: bool) -> tuple[PodShape, ...]:
    """The platform's NVIDIA device plugin (and MPS daemon) of one sharing profile: its GPU nodes only
    (renderers/device_plugin/device_plugin_manifests.py: `gpu_node_affinity`, `GPU_TAINT_TOLERATION`, `DAEMON_RESOURCES`)."""
    affinity = ((GPU_LABEL_KEY, "In", (GPU_LABEL_VALUE,)), (SHARING_PROFILE_LABEL_KEY, "In", (profile,)))
    toleration = {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}
    names = ["nvidia-device-plugin", *(["nvidia-mps-control-daemon"] if mps else [])]
    return tuple(
        PodShape(
            f"{name}-{profile}",
            na.DEVICE_PLUGIN_DAEMON,
            "renderers/device_plugin/device_plugin_manifests.py",
            daemonset=True,
            affinity=affinity,
            tolerations=(toleration,),
        )
        for name in names
    )


# --- Deployments and other pods ------------------------------------------------------------------------
# The Karpenter controller: requests = limits (Guaranteed QoS; renderers/karpenter/karpenter_values.py reads this), the
# chart's default toleration (charts/karpenter/values.yaml @ v1.14.1), system nodes only, one per node.
KARPENTER_CONTROLLER_REQUESTS: Final = Allocatable(1000, 1024)
KARPENTER_CONTROLLER: Final = PodShape(
    "karpenter",
    KARPENTER_CONTROLLER_REQUESTS,
    "renderers/karpenter/karpenter_values.py",
    node_selector=SYSTEM_SELECTOR,
    affinity=NOT_KARPENTER,
    tolerations=(CRITICAL_ADDONS_ONLY,),
    one_per_node=True,
)
# CoreDNS (EKS add-on): 2 replicas, `requests: {cpu: 100m, memory: 70Mi}` and tolerations CriticalAddonsOnly and
# the control plane, as kubernetes/kubernetes cluster/addons/dns/coredns/coredns.yaml.base, the manifest EKS's
# CoreDNS follows; it prefers (does not require) one replica per node.
COREDNS: Final = PodShape(
    "coredns",
    Allocatable(100, 70),
    "kubernetes/kubernetes cluster/addons/dns/coredns/coredns.yaml.base",
    count=2,
    tolerations=(CRITICAL_ADDONS_ONLY, {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}),
)
# The CloudWatch agent operator: aws-observability/helm-charts charts/amazon-cloudwatch-observability/values.yaml
# @ amazon-cloudwatch-observability-6.4.0 `manager.resources.requests` 100m / 64Mi, `manager.tolerations: []`
# (which replaces the root tolerations: templates/_helpers.tpl `common.tolerations`), nodeSelector linux.
# The cluster scraper (`agents[1]`) renders only with otelContainerInsights (off here).
CLOUDWATCH_OPERATOR: Final = PodShape(
    "cloudwatch-agent-operator",
    Allocatable(100, 64),
    "amazon-cloudwatch-observability 6.4.0 manager.resources",
    node_selector={OS_LABEL: "linux"},
)
# What a container that names no requests gets in a lab's and a hub's namespace (their LimitRanges,
# renderers/labs/lab_manifests.py and hub_namespace.py read this).
LIMIT_RANGE_DEFAULT_REQUESTS: Final = Allocatable(100, 256)
# The hub and the proxy: zero-to-jupyterhub 4.4.0 values.yaml `hub.resources: {}` and `proxy.chp.resources: {}`
# (no requests; this program sets none), so `<lab>-hub`'s LimitRange gives each one container's default; pinned to
# the system nodes by renderers/hub/hub_values.py.
HUB: Final = PodShape(
    "hub", LIMIT_RANGE_DEFAULT_REQUESTS, "<lab>-hub LimitRange (hub.resources: {})", node_selector=SYSTEM_NODES_ONLY
)
PROXY: Final = PodShape(
    "proxy",
    LIMIT_RANGE_DEFAULT_REQUESTS,
    "<lab>-hub LimitRange (proxy.chp.resources: {})",
    node_selector=SYSTEM_NODES_ONLY,
)
# The lab timetable's CronJob pods (renderers/timetable/timetable_manifests.py reads this): system nodes, never a Karpenter node.
TIMETABLE_JOB_REQUESTS: Final = Allocatable(50, 64)
TIMETABLE_JOB: Final = PodShape(
    "lab-timetable job",
    TIMETABLE_JOB_REQUESTS,
    "renderers/timetable/timetable_manifests.py",
    node_selector=SYSTEM_SELECTOR,
    affinity=NOT_KARPENTER,
)


# A demo pod (constants.DEMO_POD_REQUESTS, renderers/labs/demo_manifests.py): any GPU node.
def requests_of(requests: Mapping[str, str]) -> Allocatable:
    """A container's `{cpu, memory}` requests as millicores and MiB (rounded up)."""
    cpu = quantity.parse(requests.get("cpu", "0")) * 1000
    memory = quantity.parse(requests.get("memory", "0")) / 2**20
    return Allocatable(int(-(-cpu // 1)), int(-(-memory // 1)))


def as_quantities(requests: Allocatable) -> dict[str, str]:
    """`{cpu, memory}` as a manifest writes them: whole cores and GiB where exact ("1", "1Gi"), else m and Mi."""
    cpu, mib = requests.cpu_millicores, requests.memory_mib
    return {
        "cpu": f"{cpu // 1000}" if cpu % 1000 == 0 else f"{cpu}m",
        "memory": f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi",
    }


DEMO_POD: Final = PodShape(
    "demo",
    requests_of(DEMO_POD_REQUESTS),
    "renderers/labs/demo_manifests.py",
    node_selector=_GPU_NODES,
    tolerations=(GPU_TOLERATION,),
)
# The hub's CPU profile (renderers/hub/hub_profiles.py reads this): requests = limits, on the CPU user pool.
CPU_NOTEBOOK_REQUESTS: Final = Allocatable(500, 2048)
