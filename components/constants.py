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

# --- Discovery -----------------------------------------------------------------------------
# Karpenter finds subnets and the node security group by this tag (value: the cluster name).
KARPENTER_DISCOVERY_TAG: Final = "karpenter.sh/discovery"

# --- Pinned versions -------------------------------------------------------------------------
KARPENTER_VERSION: Final = "1.14.1"
KARPENTER_CHART_REPO: Final = "oci://public.ecr.aws/karpenter"
SYSTEM_NAMESPACE: Final = "kube-system"
KARPENTER_NAMESPACE: Final = SYSTEM_NAMESPACE
KARPENTER_SERVICE_ACCOUNT: Final = "karpenter"
# Namespaces where the platform's own agents run (device plugin, MPS daemon, Karpenter, CloudWatch
# agents): the GPU admission guard does not apply there, and no lab may use one.
PLATFORM_SYSTEM_NAMESPACES: Final = tuple(dict.fromkeys((SYSTEM_NAMESPACE, KARPENTER_NAMESPACE, "amazon-cloudwatch")))
# Marks a lab namespace whose pods may tolerate the GPU taint.
GPU_ENABLED_NAMESPACE_LABEL: Final = "gpu-platform.io/gpu-enabled"
# AL2023 EKS AMI release; Karpenter picks the NVIDIA variant for GPU instance types.
# Pinned (not @latest) so an AMI release never drifts every GPU node at once.
AL2023_AMI_RELEASE: Final = "v20260724"
# Tag for humans, digest of its multi-arch index for the kubelet: the tag can never be re-pointed under us.
DEVICE_PLUGIN_IMAGE: Final = (
    "nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312"
)

GPU_TAINT: Final = {"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": GPU_TAINT_EFFECT}


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
IMDS_HTTP_TOKENS: Final = "required"
IMDS_HOP_LIMIT: Final = 1
NODE_METADATA_OPTIONS: Final = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": IMDS_HOP_LIMIT,
    "httpTokens": IMDS_HTTP_TOKENS,
}
# Root device of the AL2023 EKS AMIs.
ROOT_DEVICE_NAME: Final = "/dev/xvda"
