"""Facts every part of the platform shares: labels, taints, tags and pinned versions.

Each fact is defined once here and imported by every consumer (launch template, managed node
group, NodePool, NodeOverlay, device plugin, demo workload, tests, policy pack).
"""

from __future__ import annotations

from typing import Final

PROJECT: Final = "gpu-platform"

# --- GPU node identity -------------------------------------------------------------------
# Label and taint carried by every GPU node, whoever launched it (managed node group or Karpenter).
GPU_LABEL_KEY: Final = "nvidia.com/gpu"
GPU_LABEL_VALUE: Final = "true"
GPU_TAINT_KEY: Final = "nvidia.com/gpu"
GPU_TAINT_VALUE: Final = "true"
GPU_TAINT_EFFECT: Final = "NoSchedule"
# The EKS node group API spells the same effect in upper snake case.
GPU_TAINT_EFFECT_EKS: Final = {"NoSchedule": "NO_SCHEDULE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}[GPU_TAINT_EFFECT]
GPU_RESOURCE: Final = "nvidia.com/gpu"

# Selects the device-plugin sharing profile a GPU node runs (one DaemonSet per profile).
SHARING_PROFILE_LABEL_KEY: Final = "gpu-platform.io/gpu-sharing"
# Marks the small system node group where controllers (Karpenter, CoreDNS) run.
SYSTEM_NODE_LABEL_KEY: Final = "gpu-platform.io/node-role"
SYSTEM_NODE_LABEL_VALUE: Final = "system"

# --- Well-known node labels (Kubernetes and Karpenter) ---------------------------------------
# Used in NodePool requirements and read by the policy pack's GPU-exclusion rule.
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
INSTANCE_FAMILY_LABEL: Final = "karpenter.k8s.aws/instance-family"
INSTANCE_GPU_MANUFACTURER_LABEL: Final = "karpenter.k8s.aws/instance-gpu-manufacturer"
INSTANCE_GPU_COUNT_LABEL: Final = "karpenter.k8s.aws/instance-gpu-count"
CAPACITY_TYPE_LABEL: Final = "karpenter.sh/capacity-type"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
ARCH_LABEL: Final = "kubernetes.io/arch"
OS_LABEL: Final = "kubernetes.io/os"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"

# What each demo pod requests (a lab holding the demo must fit replicas x these in its quota).
DEMO_POD_REQUESTS: Final = {"cpu": "250m", "memory": "1Gi"}

# EKS access policies (cluster-access-policy ARNs) the platform associates with access entries.
CLUSTER_ADMIN_POLICY_ARN: Final = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
CLUSTER_VIEW_POLICY_ARN: Final = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSAdminViewPolicy"
# Lab members get no access policy: their access entry names Kubernetes groups, bound in each lab's namespace
# to the Role the platform renders (components/renderers/labs/lab_rbac.py). One group per lab, and one marker group
# on every explicit entry, so the entry's group set is never empty: pulumi-aws's `kubernetesGroups` is
# Optional+Computed (hashicorp/terraform-provider-aws internal/service/eks/access_entry.go), and an omitted or
# empty set keeps the groups EKS holds, so a member moved out of every lab would keep its lab's group.
# The names avoid the prefixes EKS reserves for access-entry usernames (system:, eks:, aws:, amazon:, iam:;
# AWS EKS User Guide "Set a custom username for EKS access entries"); `system:` is also Kubernetes' own.
LAB_MEMBER_GROUP_PREFIX: Final = "gpu-platform:lab:"
# A lab's hub, proxy and hub services run in `<lab><suffix>`, a namespace where lab members have no rights.
HUB_NAMESPACE_SUFFIX: Final = "-hub"
ACCESS_ENTRY_MARKER_GROUP: Final = "gpu-platform:access-entry"
EKS_RESERVED_GROUP_PREFIXES: Final = ("system:", "eks:", "aws:", "amazon:", "iam:")

# Version of every IAM policy and trust document the platform writes.
IAM_POLICY_VERSION: Final = "2012-10-17"

# --- Pulumi type tokens shared by the offline plan and the policy pack ---------------------------
HELM_RELEASE_TYPE: Final = "kubernetes:helm.sh/v3:Release"
HELM_CHART_TYPE: Final = "kubernetes:helm.sh/v4:Chart"
HELM_TYPES: Final = (HELM_RELEASE_TYPE, HELM_CHART_TYPE)
# The children of pulumi-eks components that the program's resource transforms reach (components/resources/).
EKS_CLUSTER_TYPE: Final = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP_TYPE: Final = "aws:eks/nodeGroup:NodeGroup"

# --- kube-scheduler scoring (cluster.mostAllocatedScoring; components/resources/scheduler_scoring.py) ----------
MOST_ALLOCATED: Final = "MostAllocated"
# nvidia.com/gpu weighs most: a GPU slot is what a node costs; cpu and memory break ties between nodes that
# hold the same number of slots (weights 1-100, the EKS API's range as pulumi-aws documents it).
SCORING_WEIGHTS: Final = (("nvidia.com/gpu", 5), ("cpu", 1), ("memory", 1))

# --- Discovery -----------------------------------------------------------------------------
# Karpenter finds subnets and the node security group by this tag (value: the cluster name).
KARPENTER_DISCOVERY_TAG: Final = "karpenter.sh/discovery"

# --- Pinned versions -------------------------------------------------------------------------
KARPENTER_VERSION: Final = "1.14.1"
KARPENTER_CHART_REPO: Final = "oci://public.ecr.aws/karpenter"
SYSTEM_NAMESPACE: Final = "kube-system"
KARPENTER_NAMESPACE: Final = SYSTEM_NAMESPACE
KARPENTER_SERVICE_ACCOUNT: Final = "karpenter"
# The controller's IAM role is f"{cluster_name}{KARPENTER_CONTROLLER_ROLE_SUFFIX}": the longest name
# derived from the cluster name, so it also bounds the cluster name (settings.CLUSTER_NAME_MAX).
KARPENTER_CONTROLLER_ROLE_SUFFIX: Final = "-karpenter-controller"
# Namespaces where the platform's own agents run (device plugin, MPS daemon, Karpenter, CloudWatch
# agents): the GPU admission guard does not apply there, and no lab may use one.
# The namespace the amazon-cloudwatch-observability add-on installs its agents in.
CLOUDWATCH_AGENT_NAMESPACE: Final = "amazon-cloudwatch"
PLATFORM_SYSTEM_NAMESPACES: Final = tuple(
    dict.fromkeys((SYSTEM_NAMESPACE, KARPENTER_NAMESPACE, CLOUDWATCH_AGENT_NAMESPACE))
)
# Marks a lab namespace whose pods may tolerate the GPU taint.
GPU_ENABLED_NAMESPACE_LABEL: Final = "gpu-platform.io/gpu-enabled"
# AL2023 EKS AMI release; Karpenter picks the NVIDIA variant for GPU instance types.
# Pinned (not @latest) so an AMI release never drifts every GPU node at once.
AL2023_AMI_RELEASE: Final = "v20260724"
# The Kubernetes patch each minor's AMIs of that release carry. An EKS managed node group pins the
# same AMIs by `releaseVersion` "<patch>-<date>" (e.g. 1.35.6-20260724). The AMI build takes the newest
# binaries in s3://amazon-eks at build time (awslabs/amazon-eks-ami hack/latest-binaries.sh @ v20260724),
# so the patch is read from the release notes: awslabs/amazon-eks-ami CHANGELOG.md "AMI Release
# v20260714" (main @ 15822511: 1.34.9, 1.35.6, 1.36.2, binaries of 2026-07-05) and the v20260728 release
# notes (github.com/awslabs/amazon-eks-ami/releases/tag/v20260728: 1.35.6, 1.36.2) bracket v20260724.
AL2023_AMI_KUBERNETES_PATCH: Final = {"1.34": "1.34.9", "1.35": "1.35.6", "1.36": "1.36.2"}


def al2023_release_version(kubernetes_version: str) -> str:
    """The managed node group `releaseVersion` of AL2023_AMI_RELEASE for one Kubernetes minor."""
    return f"{AL2023_AMI_KUBERNETES_PATCH[kubernetes_version]}-{AL2023_AMI_RELEASE.removeprefix('v')}"


# Tag for humans, digest of its multi-arch index for the kubelet: the tag can never be re-pointed under us.
DEVICE_PLUGIN_IMAGE: Final = (
    "nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312"
)

# EKS labels every node of a managed node group with the group's name.
EKS_NODE_GROUP_LABEL_KEY: Final = "eks.amazonaws.com/nodegroup"


def managed_gpu_node_group_name(cluster_name: str) -> str:
    """The EKS name of the managed GPU node group (and so its nodes' `eks.amazonaws.com/nodegroup`)."""
    return f"{cluster_name}-gpu"


GPU_TAINT: Final = {"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": GPU_TAINT_EFFECT}
# Tolerates exactly that taint (workloads meant for GPU nodes); copy it into each object (`dict(...)`).
GPU_TOLERATION: Final = {**GPU_TAINT, "operator": "Equal"}


# Learners' CPU user nodes (the CPU user NodePool), named as zero-to-jupyterhub names user nodes: the label its
# `scheduling.userPods.nodeAffinity.matchNodePurpose` matches and the taint `scheduling.userPods.tolerations`
# tolerates (jupyterhub/zero-to-jupyterhub-k8s jupyterhub/values.yaml and files/hub/jupyterhub_config.py @ 4.4.0).
USER_NODE_LABEL_KEY: Final = "hub.jupyter.org/node-purpose"
USER_NODE_LABEL_VALUE: Final = "user"
USER_TAINT: Final = {"key": "hub.jupyter.org/dedicated", "value": "user", "effect": "NoSchedule"}
USER_TOLERATION: Final = {**USER_TAINT, "operator": "Equal"}


def gpu_node_labels(sharing_profile: str) -> dict[str, str]:
    """Labels every GPU node carries: the GPU label and the device-plugin sharing profile it runs."""
    return {GPU_LABEL_KEY: GPU_LABEL_VALUE, SHARING_PROFILE_LABEL_KEY: sharing_profile}


# AWS managed policies every EKS worker node role carries (the Karpenter getting-started node role
# set): join the cluster, run the VPC CNI, pull from ECR, and reach SSM instead of SSH.
NODE_ROLE_MANAGED_POLICIES: Final = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)

# Instance metadata on every node: IMDSv2 tokens only, one hop. Pods sit one hop further (behind
# their veth), so they cannot reach the node's credentials; they get AWS access through EKS Pod
# Identity. What must read IMDS (nodeadm, the VPC CNI, the Pod Identity agent) runs in the host
# network. Karpenter's EC2NodeClass spelling; launch templates translate it.
IMDS_HTTP_ENDPOINT: Final = "enabled"
IMDS_HTTP_PROTOCOL_IPV6: Final = "disabled"
IMDS_HTTP_TOKENS: Final = "required"
IMDS_HOP_LIMIT: Final = 1
NODE_METADATA_OPTIONS: Final = {
    "httpEndpoint": IMDS_HTTP_ENDPOINT,
    "httpProtocolIPv6": IMDS_HTTP_PROTOCOL_IPV6,
    "httpPutResponseHopLimit": IMDS_HOP_LIMIT,
    "httpTokens": IMDS_HTTP_TOKENS,
}
# Root device of the AL2023 EKS AMIs, and the volume type of every node root volume (launch templates
# and EC2NodeClasses alike).
ROOT_VOLUME_TYPE: Final = "gp3"
ROOT_DEVICE_NAME: Final = "/dev/xvda"

# --- Observability add-ons -----------------------------------------------------------------------
# EKS add-on versions published for Kubernetes 1.34-1.36 (`aws eks describe-addon-versions`).
NODE_MONITORING_AGENT_ADDON: Final = "eks-node-monitoring-agent"
NODE_MONITORING_AGENT_ADDON_VERSION: Final = "v1.6.6-eksbuild.1"
CLOUDWATCH_OBSERVABILITY_ADDON: Final = "amazon-cloudwatch-observability"
# v6.4.0-eksbuild.1: the build of chart amazon-cloudwatch-observability-6.4.0 (aws-observability/helm-charts), the
# newest chart tag, whose templates the one-DCGM-engine design was read from (docs/gpu-health.md). A v6.5.0 build is
# listed by some accounts, but no chart tag or release note for it could be found to read; `preflight --check
# addons` asks each account before `up`.
CLOUDWATCH_OBSERVABILITY_ADDON_VERSION: Final = "v6.4.0-eksbuild.1"
# Where the add-on runs its CloudWatch agent (CLOUDWATCH_AGENT_NAMESPACE, defined with the platform
# namespaces above); the Pod Identity association names this pair (aws-observability/helm-charts
# charts/amazon-cloudwatch-observability, `cloudwatch-agent.serviceAccountName`; AWS "Install the
# CloudWatch agent with the Amazon CloudWatch Observability EKS add-on").
CLOUDWATCH_AGENT_SERVICE_ACCOUNT: Final = "cloudwatch-agent"
CONTAINER_INSIGHTS_NAMESPACE: Final = "ContainerInsights"

# --- DCGM: one host engine per GPU node (docs/gpu-health.md) ----------------------------------------------
# The node monitoring agent's nv-hostengine DaemonSet and the port it publishes on the node
# (aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/templates/dcgm-daemonset.yaml @ v1.6.6:
# `nv-hostengine -n -b ALL`, containerPort/hostPort 5555).
NODE_MONITORING_DCGM_SERVER: Final = "dcgm-server"
DCGM_HOSTENGINE_PORT: Final = 5555
# The platform's dcgm-exporter (per-pod GPU use on shared GPUs, NVIDIA/dcgm-exporter#594, first released in
# 4.5.3-4.8.2). The tag is the release's chart default (NVIDIA/dcgm-exporter deployment/values.yaml @
# 4.5.3-4.8.2: `tag: 4.5.3-4.8.2-distroless`); its digest could not be read offline (docs/gpu-health.md).
DCGM_EXPORTER_IMAGE: Final = "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless"
DCGM_EXPORTER_NAME: Final = "gpu-platform-dcgm-exporter"

# The placeholder container of warm-headroom PodTemplates. Karpenter only simulates these pods (they never
# run), but the template must still name a real, pinned image. Tag for humans, index digest for the kubelet.
WARM_SLOT_IMAGE: Final = (
    "registry.k8s.io/pause:3.10@sha256:ee6521f290b2168b6e0935a181d4cff9be1ac3f505666ef0e3c98fae8199917a"
)

# --- The lab timetable -----------------------------------------------------------------------------
# Pods Karpenter must not disrupt voluntarily (consolidation, and drift up to the pool's terminationGracePeriod).
DO_NOT_DISRUPT_ANNOTATION: Final = "karpenter.sh/do-not-disrupt"
# kubectl for the timetable's CronJobs: the Kubernetes project's own image (build/server-image/kubectl/Dockerfile in
# kubernetes/kubernetes: debian-base, ENTRYPOINT /bin/kubectl; listed under "Container Images" in CHANGELOG-1.3x.md).
# v1.35 is within kubectl's one-minor skew of every supported cluster version (1.34-1.36). Tag for humans, digest
# for the kubelet; the digest is the one public pin found for this tag, not checked against the registry offline.
KUBECTL_IMAGE: Final = (
    "registry.k8s.io/kubectl:v1.35.1@sha256:c93e4fb811b3217ef69ee7a79a9a15fb277887cd1c3002fbe154e676037a274a"
)
# Where the timetable's CronJobs run (Pod Security `restricted`, no GPU toleration).
TIMETABLE_NAMESPACE: Final = "lab-timetable"
# --- Learning-lab JupyterHub (components/renderers/hub/; the chart's own names: facts/jupyterhub_chart.py) ---
# zero-to-jupyterhub chart 4.4.0 ships JupyterHub 5.5.0 with jupyterhub-kubespawner 7.0.0
# (jupyterhub/zero-to-jupyterhub-k8s images/hub/requirements.txt @ 4.4.0).
JUPYTERHUB_CHART: Final = "jupyterhub"
JUPYTERHUB_CHART_VERSION: Final = "4.4.0"
JUPYTERHUB_CHART_REPO: Final = "https://hub.jupyter.org/helm-chart/"
JUPYTERHUB_VERSION: Final = "5.5.0"
KUBESPAWNER_VERSION: Final = "7.0.0"
# The instance metadata service every node serves; no lab pod may reach it (IMDSv2 hop limit 1, NetworkPolicy).
INSTANCE_METADATA_IP: Final = "169.254.169.254"
# Amazon EFS CSI driver EKS add-on (kubernetes-sigs/aws-efs-csi-driver v3.4.1): its controller's service account
# (charts/aws-efs-csi-driver/values.yaml `controller.serviceAccount.name`) gets AWS access through Pod Identity.
EFS_CSI_ADDON: Final = "aws-efs-csi-driver"
EFS_CSI_ADDON_VERSION: Final = "v3.4.1-eksbuild.1"
EFS_CSI_PROVISIONER: Final = "efs.csi.aws.com"
EFS_CSI_CONTROLLER_SERVICE_ACCOUNT: Final = "efs-csi-controller-sa"
EFS_CSI_DRIVER_POLICY: Final = "service-role/AmazonEFSCSIDriverPolicy"
NFS_PORT: Final = 2049
# Amazon EBS CSI driver EKS add-on (kubernetes-sigs/aws-ebs-csi-driver v1.64.0): block volumes for the hubs' SQLite
# databases, which must not live on NFS (jupyterhub docs/source/explanation/database.md). Its controller's service
# account (charts/aws-ebs-csi-driver/values.yaml `controller.serviceAccount.name`) gets AWS access through Pod
# Identity (install.md in its docs folder @ v1.64.0, "EKS Pod Identity"), with the AWS managed policy that page names:
# AmazonEBSCSIDriverPolicyV2, scoped to the volumes the driver tags `ebs.csi.aws.com/cluster: true`.
EBS_CSI_ADDON: Final = "aws-ebs-csi-driver"
EBS_CSI_ADDON_VERSION: Final = "v1.64.0-eksbuild.1"
EBS_CSI_PROVISIONER: Final = "ebs.csi.aws.com"
EBS_CSI_CONTROLLER_SERVICE_ACCOUNT: Final = "ebs-csi-controller-sa"
EBS_CSI_DRIVER_POLICY: Final = "service-role/AmazonEBSCSIDriverPolicyV2"
