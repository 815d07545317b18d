"""gpu-platform, in the order of the architecture picture (README.md):

settings -> network -> EKS cluster -> GPU nodes -> Karpenter (+ the lab timetable) -> device plugin -> labs and the
GPU guard -> who may use the cluster -> the demo -> each lab's JupyterHub -> GPU fleet health and use.
"""

import pulumi

from components.access import ClusterAccess, ClusterAccessArgs
from components.cluster import Cluster, ClusterArgs
from components.demo import DemoWorkload, DemoWorkloadArgs
from components.device_plugin import DevicePlugin, DevicePluginArgs
from components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from components.hub import LabHubs, LabHubsArgs
from components.karpenter import Karpenter, KarpenterArgs
from components.lab_timetable import LabTimetable, LabTimetableArgs
from components.labs import Labs, LabsArgs
from components.network import Network, NetworkArgs
from components.observability import Observability, ObservabilityArgs
from components.resources.deployer_check import warn_unless_deployer
from components.resources.runtime_settings import read_settings

settings = read_settings()

network = Network("network", NetworkArgs(settings=settings))
cluster = Cluster("cluster", ClusterArgs(settings=settings, network=network))
# EKS makes whoever creates the cluster its admin: say so when that is not the configured deployer.
warn_unless_deployer(settings.cluster)

# --- GPU nodes: a fixed floor of tainted GPU capacity ---
gpu_nodes = None
if settings.gpu_node_group.enabled:
    gpu_nodes = GpuNodeGroup(
        "gpu-nodes",
        GpuNodeGroupArgs(settings=settings, cluster=cluster.eks, subnet_ids=network.private_subnet_ids),
    )

# --- Karpenter: GPU nodes on demand, gone when idle ---
if settings.karpenter.enabled:
    karpenter = Karpenter(
        "karpenter",
        KarpenterArgs(
            settings=settings,
            eks_cluster_name=cluster.eks_cluster_name,
            cluster_endpoint=cluster.endpoint,
            k8s_provider=cluster.provider,
            system_node_group=cluster.system_node_group,
            pod_identity_agent=cluster.pod_identity_agent,
            coredns=cluster.coredns,
        ),
    )
    pulumi.export("karpenterInterruptionQueue", karpenter.interruption_queue.name)
    # --- The lab timetable: warm GPUs before each class (CronJobs on the pools' CapacityBuffers) ---
    if karpenter.capacity_buffers and any(lab.sessions for lab in settings.labs):
        LabTimetable(
            "lab-timetable",
            LabTimetableArgs(
                settings=settings, k8s_provider=cluster.provider, capacity_buffers=dict(karpenter.capacity_buffers)
            ),
        )

# --- NVIDIA device plugin (GPU sharing) and the learning-lab demo ---
device_plugin = DevicePlugin("nvidia-device-plugin", DevicePluginArgs(settings=settings, k8s_provider=cluster.provider))

# --- Learning labs (namespace, quota, members) and the GPU admission guard ---
labs = Labs(
    "labs",
    LabsArgs(settings=settings, k8s_provider=cluster.provider),
)
# --- Who may use the cluster: one EKS access entry per principal (admins, viewers, lab members) ---
ClusterAccess("access", ClusterAccessArgs(settings=settings, eks_cluster_name=cluster.eks_cluster_name))
if settings.demo.enabled:
    DemoWorkload(
        "learning-lab",
        DemoWorkloadArgs(
            settings=settings,
            k8s_provider=cluster.provider,
            device_plugin=device_plugin,
            gpu_node_group=gpu_nodes.node_group if gpu_nodes is not None else None,
            lab_namespace=labs.namespaces.get(settings.demo.namespace),
            lab_objects=labs.namespace_objects.get(settings.demo.namespace, []),
        ),
    )

# --- Each lab's JupyterHub (learners' front door) on shared EFS home directories ---
if any(lab.hub is not None for lab in settings.labs):
    hubs = LabHubs(
        "hubs",
        LabHubsArgs(
            settings=settings,
            k8s_provider=cluster.provider,
            eks_cluster_name=cluster.eks_cluster_name,
            vpc_id=network.vpc_id,
            private_subnet_ids=network.private_subnet_ids,
            node_security_group_id=cluster.node_security_group_id,
            system_node_group=cluster.system_node_group,
            pod_identity_agent=cluster.pod_identity_agent,
            lab_namespaces=labs.namespaces,
            lab_objects=labs.namespace_objects,
        ),
    )
    pulumi.export("hubHomeFileSystemId", hubs.file_system.id)

# --- GPU fleet health and utilisation: node repair signals, GPU metrics, dashboard, alarms ---
if settings.observability.node_repair or settings.observability.gpu_metrics:
    observability = Observability(
        "observability",
        ObservabilityArgs(
            settings=settings,
            eks_cluster_name=cluster.eks_cluster_name,
            system_node_group=cluster.system_node_group,
            pod_identity_agent=cluster.pod_identity_agent,
            k8s_provider=cluster.provider,
        ),
    )
    if observability.alarm_topic is not None:
        pulumi.export("gpuAlarmTopicArn", observability.alarm_topic.arn)

pulumi.export("clusterName", cluster.cluster_name)
pulumi.export("kubeconfig", cluster.kubeconfig)
pulumi.export("nodeSecurityGroupId", cluster.node_security_group_id)
pulumi.export("vpcId", network.vpc_id)
pulumi.export("privateSubnetIds", network.private_subnet_ids)
pulumi.export("publicSubnetIds", network.public_subnet_ids)
