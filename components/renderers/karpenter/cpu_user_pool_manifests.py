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
from typing import Final

from components.facts.constants import (
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_TYPE_LABEL,
    OS_LABEL,
    USER_NODE_LABEL_KEY,
    USER_NODE_LABEL_VALUE,
    USER_TAINT,
)
from components.facts.node_allocatable import CPU_USER_MAX_PODS
from components.renderers.karpenter.karpenter_manifests import (
    NODECLASS_API_VERSION,
    NODECLASS_GROUP,
    NODEPOOL_API_VERSION,
    Manifest,
    base_node_class_spec,
    requirement,
)
from components.settings import CpuUserPoolSettings, RootVolumeSettings

# Room for a multi-GB notebook image and its unpacked layers; gp3's baseline IOPS and throughput (no extra cost);
# encrypted, deleted with the node.
ROOT_VOLUME: Final = RootVolumeSettings(size_gib=60, iops=3000, throughput_mibps=125)


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
    """The CPU user pool's EC2NodeClass (same name): the GPU pools' base (karpenter_manifests), the standard AMI
    variant, no userData of ours; kubelet maxPods as the fit model counts it (node_allocatable.CPU_USER_MAX_PODS)."""
    spec = base_node_class_spec(
        cluster_name, tags, ROOT_VOLUME, max_pods=CPU_USER_MAX_PODS, node_role_name=node_role_name
    )
    return {"apiVersion": NODECLASS_API_VERSION, "kind": "EC2NodeClass", "metadata": {"name": pool.name}, "spec": spec}
