"""Karpenter 1.14.1 objects as plain dicts: GPU NodePools, their EC2NodeClasses and the NodeOverlays that
teach Karpenter about GPU sharing (the controller's Helm values: `karpenter_values`). Pure: no Pulumi import.

API versions are the current ones: NodePool `karpenter.sh/v1`, EC2NodeClass `karpenter.k8s.aws/v1`,
NodeOverlay `karpenter.sh/v1alpha1` (schemas: ../shared/schemas/karpenter/v1.14.1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from components.facts import gpu_catalog
from components.facts.constants import (
    AL2023_AMI_RELEASE,
    ARCH_LABEL,
    CAPACITY_TYPE_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    INSTANCE_FAMILY_LABEL,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_GPU_MANUFACTURER_LABEL,
    INSTANCE_TYPE_LABEL,
    KARPENTER_DISCOVERY_TAG,
    NODE_METADATA_OPTIONS,
    NODEPOOL_LABEL,
    OS_LABEL,
    ROOT_DEVICE_NAME,
    ROOT_VOLUME_TYPE,
    gpu_node_labels,
)
from components.renderers.device_plugin.gpu_capacity import schedulable_gpus
from components.renderers.nodes.gpu_bootstrap import render_gpu_user_data
from components.settings import GpuNodeSettings, GpuSharingSettings, NodePoolSettings, RootVolumeSettings
from components.settings.resolved import sharing_kind

Manifest = dict[str, Any]

NODEPOOL_API_VERSION: Final = "karpenter.sh/v1"
NODECLASS_API_VERSION: Final = "karpenter.k8s.aws/v1"
NODECLASS_GROUP: Final = "karpenter.k8s.aws"
NODEOVERLAY_API_VERSION: Final = "karpenter.sh/v1alpha1"

# Overlays of one pool select disjoint GPU counts and pools are disjoint by name, so no two overlays
# ever compete for the same instance type: one weight for all of them is enough.
GPU_SHARING_OVERLAY_WEIGHT: Final = 10
# Tags Karpenter sets itself; the EC2NodeClass CRD rejects them in spec.tags (a prefix for the cluster tag).
KARPENTER_MANAGED_TAG_KEYS: Final = (
    "eks:eks-cluster-name",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
)
KARPENTER_MANAGED_TAG_PREFIX: Final = "kubernetes.io/cluster"


def requirement(key: str, values: list[str]) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": values}


def nodeclass_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """Stack tags minus the keys Karpenter owns (the CRD's CEL rules reject them)."""
    return {
        key: value
        for key, value in sorted(tags.items())
        if key not in KARPENTER_MANAGED_TAG_KEYS and not key.startswith(KARPENTER_MANAGED_TAG_PREFIX)
    }


# --- NodePool ---------------------------------------------------------------------------------------


def capacity_types(pool: NodePoolSettings) -> list[str]:
    """The pool's capacity types, with `reserved` first when it names capacity reservations (Karpenter prefers
    reserved, then spot, then on-demand: website/content/en/preview/concepts/nodepools.md at v1.14.1)."""
    return (["reserved"] if pool.capacity_reservations else []) + list(pool.capacity_types)


def node_pool(pool: NodePoolSettings, sharing: GpuSharingSettings, *, session_budgets: Sequence[Manifest]) -> Manifest:
    """One GPU NodePool; its nodes carry the same GPU labels and taint as the managed GPU node group.

    `sharing`: the pool's GPU sharing; `session_budgets`: its lab timetable's budget windows
    (`timetable_manifests.budget_windows`).
    """
    if pool.instance_types:
        instance_requirement = requirement(INSTANCE_TYPE_LABEL, sorted(pool.instance_types))
    else:
        instance_requirement = requirement(INSTANCE_FAMILY_LABEL, sorted(pool.instance_families))
    disruption: dict[str, Any] = {
        "consolidationPolicy": pool.consolidation_policy,
        "consolidateAfter": pool.consolidate_after,
        "budgets": [
            *(budget.model_dump(mode="json", exclude_none=True) for budget in pool.disruption_budgets),
            # No voluntary disruption from each session's lead time to its end (docs/timetable.md).
            *session_budgets,
        ],
    }
    return {
        "apiVersion": NODEPOOL_API_VERSION,
        "kind": "NodePool",
        "metadata": {"name": pool.name},
        "spec": {
            "template": {
                "metadata": {"labels": gpu_node_labels(sharing.profile)},
                "spec": {
                    "nodeClassRef": {"group": NODECLASS_GROUP, "kind": "EC2NodeClass", "name": pool.name},
                    "requirements": [
                        instance_requirement,
                        requirement(INSTANCE_GPU_MANUFACTURER_LABEL, ["nvidia"]),
                        requirement(CAPACITY_TYPE_LABEL, capacity_types(pool)),
                        requirement(ARCH_LABEL, list(pool.architectures)),
                        requirement(OS_LABEL, ["linux"]),
                    ],
                    "taints": [dict(GPU_TAINT)],
                    "expireAfter": pool.expire_after,
                    # Expiry and drift drain forcefully after this, even past a blocking PDB.
                    "terminationGracePeriod": pool.termination_grace_period,
                },
            },
            "limits": {
                "cpu": str(pool.cpu_limit),
                # gpuLimit counts physical GPUs. Karpenter charges a pool with its nodes' capacity, and a
                # sharing node advertises GPUs x replicas (the device plugin, and our NodeOverlays before it
                # registers), so the limit in nvidia.com/gpu units is gpuLimit x replicas. On g6f (one slice a
                # node) it is gpuLimit, and with cpu it is the backstop Karpenter #8368 asks for: a type whose
                # capacity reads 0 can overrun a pool's limits.
                GPU_RESOURCE: str(schedulable_gpus(pool.gpu_limit, sharing)),
            },
            "disruption": disruption,
            "weight": pool.weight,
        },
    }


# --- EC2NodeClass -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeClassBasis:
    """What every pool's EC2NodeClass reads of the stack: the cluster's name, its tags, how GPU nodes are built."""

    cluster_name: str
    tags: Mapping[str, str]
    nodes: GpuNodeSettings  # gpuNodes as GPU node userData uses it (hub images pre-pulled too: `gpu_node_bootstrap`)


def base_node_class_spec(
    cluster_name: str, tags: Mapping[str, str], volume: RootVolumeSettings, *, max_pods: int, node_role_name: str
) -> dict[str, Any]:
    """What every EC2NodeClass of this program holds (GPU pools and the CPU user pool): the node role, the pinned
    AL2023 release, the cluster's discovery tags, an encrypted gp3 root, IMDSv2 one hop, kubelet maxPods, tags."""
    spec: dict[str, Any] = {
        "role": node_role_name,
        # Pinned release: `@latest` would drift every node on each AMI release. The alias resolves the NVIDIA
        # variant for instance types with GPUs, the standard one for the others.
        "amiSelectorTerms": [{"alias": f"al2023@{AL2023_AMI_RELEASE}"}],
        "subnetSelectorTerms": [{"tags": {KARPENTER_DISCOVERY_TAG: cluster_name}}],
        "securityGroupSelectorTerms": [{"tags": {KARPENTER_DISCOVERY_TAG: cluster_name}}],
        "blockDeviceMappings": [
            {
                "deviceName": ROOT_DEVICE_NAME,
                "rootVolume": True,
                "ebs": {
                    "volumeSize": f"{volume.size_gib}Gi",
                    "volumeType": ROOT_VOLUME_TYPE,
                    "iops": volume.iops,
                    "throughput": volume.throughput_mibps,
                    "encrypted": volume.encrypted,
                    "deleteOnTermination": volume.delete_on_termination,
                },
            }
        ],
        # IMDSv2 only, one hop: pods get AWS credentials from Pod Identity, never from the node.
        "metadataOptions": dict(NODE_METADATA_OPTIONS),
        # Karpenter's own NodeConfig sets maxPods and wins over userData, so it is set here.
        "kubelet": {"maxPods": max_pods},
    }
    node_tags = nodeclass_tags(tags)
    if node_tags:
        spec["tags"] = node_tags
    return spec


def node_class(
    pool: NodePoolSettings, sharing: GpuSharingSettings, basis: NodeClassBasis, *, node_role_name: str
) -> Manifest:
    """The EC2NodeClass of one pool (same name): pinned AL2023 (NVIDIA variant), IMDSv2, encrypted gp3 root."""
    nodes = basis.nodes
    spec = base_node_class_spec(
        basis.cluster_name, basis.tags, nodes.root_volume, max_pods=nodes.max_pods, node_role_name=node_role_name
    )
    spec["userData"] = render_gpu_user_data(
        nodes, launched_by="karpenter", node_labels=gpu_node_labels(sharing.profile)
    )
    if pool.capacity_reservations:
        # ODCRs and Capacity Blocks by id or tags (tasks/odcrs.md at v1.14.1); the controller policy already allows
        # ec2:DescribeCapacityReservations (karpenter_iam).
        spec["capacityReservationSelectorTerms"] = [
            term.model_dump(mode="json", exclude_none=True) for term in pool.capacity_reservations
        ]
    return {
        "apiVersion": NODECLASS_API_VERSION,
        "kind": "EC2NodeClass",
        "metadata": {"name": pool.name},
        "spec": spec,
    }


# --- NodeOverlay ------------------------------------------------------------------------------------


def pool_gpu_counts(pool: NodePoolSettings) -> tuple[int, ...]:
    """Distinct physical GPU counts among the instance types a pool may launch, ascending."""
    return tuple(sorted({gpu_catalog.gpu_count(t) for t in pool.selected_instance_types}))


def node_overlay_name(pool: NodePoolSettings, gpus: int) -> str:
    return f"{pool.name}-{gpus}gpu-shared"


def g6f_overlay_name(pool: NodePoolSettings) -> str:
    return f"{pool.name}-g6f-slice"


def node_overlays(pool: NodePoolSettings, sharing: GpuSharingSettings) -> list[Manifest]:
    """NodeOverlays making Karpenter see a GPU node's real `nvidia.com/gpu`: GPUs x replicas when it shares.

    Without them Karpenter models a 1-GPU type as `nvidia.com/gpu: 1` and launches one node per pending
    pod. Overlay capacity replaces the instance type's value, so there is one overlay per GPU count.
    A g6f pool gets one overlay of 1 per node by instance family: EC2 reports its GPU count as 0, so
    Karpenter would see no `nvidia.com/gpu` at all (aws/karpenter-provider-aws
    website/content/en/docs/concepts/nodeoverlays.md, "Example: Fractional GPU Instances (g6f)", PR #9395).
    None when the pool neither shares GPUs nor is g6f (`sharing`: the pool's).
    """
    if sharing_kind(sharing, pool.selected_instance_types) == "g6f":
        return [
            {
                "apiVersion": NODEOVERLAY_API_VERSION,
                "kind": "NodeOverlay",
                "metadata": {"name": g6f_overlay_name(pool)},
                "spec": {
                    "weight": GPU_SHARING_OVERLAY_WEIGHT,
                    "requirements": [
                        requirement(NODEPOOL_LABEL, [pool.name]),
                        requirement(INSTANCE_FAMILY_LABEL, list(gpu_catalog.FRACTIONAL_GPU_FAMILIES)),
                    ],
                    "capacity": {GPU_RESOURCE: "1"},
                },
            }
        ]
    if sharing.replicas <= 1:
        return []
    return [
        {
            "apiVersion": NODEOVERLAY_API_VERSION,
            "kind": "NodeOverlay",
            "metadata": {"name": node_overlay_name(pool, gpus)},
            "spec": {
                "weight": GPU_SHARING_OVERLAY_WEIGHT,
                "requirements": [
                    requirement(NODEPOOL_LABEL, [pool.name]),
                    requirement(INSTANCE_GPU_COUNT_LABEL, [str(gpus)]),
                ],
                "capacity": {GPU_RESOURCE: str(schedulable_gpus(gpus, sharing))},
            },
        }
        for gpus in pool_gpu_counts(pool)
    ]
