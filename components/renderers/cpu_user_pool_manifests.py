"""The learners' CPU user pool as Karpenter 1.14.1 objects: a NodePool and its EC2NodeClass. Pure: no Pulumi.

Core and user nodes apart, as zero-to-jupyterhub and 2i2c run them: the hubs and proxies stay on the system
nodes, the CPU profile's notebooks come here. The nodes carry z2jh's user label and taint
(`hub.jupyter.org/node-purpose: user`, `hub.jupyter.org/dedicated=user:NoSchedule`: values.yaml
`scheduling.userPods` @ 4.4.0), so nothing else lands on them; empty nodes go after `consolidateAfter`.
The EC2NodeClass is the GPU pools' (same role, discovery tags, IMDSv2, pinned AL2023 release, encrypted gp3
root) with the standard AMI variant the alias resolves for CPU types, and no userData of ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from components.facts.constants import (
    AL2023_AMI_RELEASE,
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_DISCOVERY_TAG,
    NODE_METADATA_OPTIONS,
    OS_LABEL,
    ROOT_DEVICE_NAME,
    ROOT_VOLUME_TYPE,
    USER_NODE_LABEL_KEY,
    USER_NODE_LABEL_VALUE,
    USER_TAINT,
)
from components.facts.node_allocatable import CPU_USER_MAX_PODS
from components.renderers.karpenter_manifests import (
    NODECLASS_API_VERSION,
    NODECLASS_GROUP,
    NODEPOOL_API_VERSION,
    Manifest,
    nodeclass_tags,
    requirement,
)
from components.settings import CpuUserPoolSettings

# Room for a multi-GB notebook image and its unpacked layers; gp3's baseline IOPS and throughput (free).
ROOT_VOLUME_GIB: Final = 60
ROOT_VOLUME_IOPS: Final = 3000
ROOT_VOLUME_THROUGHPUT_MIBPS: Final = 125


def node_labels() -> dict[str, str]:
    return {USER_NODE_LABEL_KEY: USER_NODE_LABEL_VALUE}


def node_pool(pool: CpuUserPoolSettings) -> Manifest:
    """The CPU user NodePool: CPU types, the user label and taint, empty nodes consolidated."""
    return {
        "apiVersion": NODEPOOL_API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": pool.name},
        "spec": {
            "template": {
                "metadata": {"labels": node_labels()},
                "spec": {
                    "nodeClassRef": {"group": NODECLASS_GROUP, "kind": "EC2NodeClass", "name": pool.name},
                    "requirements": [
                        requirement(INSTANCE_TYPE_LABEL, sorted(pool.instance_types)),
                        # Never a GPU instance, whatever the types say (the policy pack's gpu-nodes-tainted rule).
                        {"key": INSTANCE_GPU_COUNT_LABEL, "operator": "DoesNotExist"},
                        # spot is opt-in: a reclaimed spot node ends every notebook on it.
                        requirement(CAPACITY_TYPE_LABEL, [pool.capacity_type]),
                        requirement(ARCH_LABEL, ["amd64"]),
                        requirement(OS_LABEL, ["linux"]),
                    ],
                    "taints": [dict(USER_TAINT)],
                    "expireAfter": pool.expire_after,
                    "terminationGracePeriod": pool.termination_grace_period,
                },
            },
            "limits": {"cpu": str(pool.cpu_limit)},
            # Notebooks carry karpenter.sh/do-not-disrupt, so only empty nodes go.
            "disruption": {
                "consolidationPolicy": "WhenEmpty",
                "consolidateAfter": pool.consolidate_after,
                "budgets": [{"nodes": "10%"}],
            },
        },
    }


def node_class(
    pool: CpuUserPoolSettings, cluster_name: str, tags: Mapping[str, str], *, node_role_name: str
) -> Manifest:
    """The CPU user pool's EC2NodeClass (same name): pinned AL2023 standard variant, IMDSv2, encrypted gp3 root."""
    spec: dict[str, Any] = {
        "role": node_role_name,
        # The alias resolves the standard (non-NVIDIA) AMI for CPU instance types; pinned like the GPU pools'.
        "amiSelectorTerms": [{"alias": f"al2023@{AL2023_AMI_RELEASE}"}],
        "subnetSelectorTerms": [{"tags": {KARPENTER_DISCOVERY_TAG: cluster_name}}],
        "securityGroupSelectorTerms": [{"tags": {KARPENTER_DISCOVERY_TAG: cluster_name}}],
        "blockDeviceMappings": [
            {
                "deviceName": ROOT_DEVICE_NAME,
                "rootVolume": True,
                "ebs": {
                    "volumeSize": f"{ROOT_VOLUME_GIB}Gi",
                    "volumeType": ROOT_VOLUME_TYPE,
                    "iops": ROOT_VOLUME_IOPS,
                    "throughput": ROOT_VOLUME_THROUGHPUT_MIBPS,
                    "encrypted": True,
                    "deleteOnTermination": True,
                },
            }
        ],
        "metadataOptions": dict(NODE_METADATA_OPTIONS),
        # The fit model counts kube-reserved memory for this many pods (node_allocatable.CPU_USER_MAX_PODS).
        "kubelet": {"maxPods": CPU_USER_MAX_PODS},
    }
    node_tags = nodeclass_tags(tags)
    if node_tags:
        spec["tags"] = node_tags
    return {"apiVersion": NODECLASS_API_VERSION, "kind": "EC2NodeClass", "metadata": {"name": pool.name}, "spec": spec}
