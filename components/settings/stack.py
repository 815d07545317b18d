"""`StackSettings`: every section of one stack, its resolved GPU pools (`resolved`, built once) and the stack-wide
views (the images GPU nodes pre-pull, the add-ons that run). The checks across sections live in
`components/settings/checks/`, which `load_settings` runs once the model is built."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import Field

from components.settings.cluster import ClusterSettings, NetworkSettings, SystemNodeGroupSettings
from components.settings.fields import ClusterName, KubernetesVersion, Region, SettingsModel, TagKey, TagValue
from components.settings.gpu import GpuNodeGroupSettings, GpuNodeSettings, GpuSharingSettings
from components.settings.karpenter import KarpenterSettings
from components.settings.labs import DemoSettings, LabSettings
from components.settings.observability import ObservabilitySettings
from components.settings.resolved import ResolvedStack, resolve


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

    @functools.cached_property
    def resolved(self) -> ResolvedStack:
        """Every GPU pool worked out once from these sections (`components/settings/resolved.py`)."""
        return resolve(
            karpenter=self.karpenter,
            gpu_node_group=self.gpu_node_group,
            gpu_sharing=self.gpu_sharing,
            gpu_nodes=self.gpu_nodes,
            observability=self.observability,
            labs=self.labs,
            ebs_csi=self.ebs_csi_driver_enabled,
        )

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy whose pools are resolved afresh from its own sections (the cached `resolved` is not carried)."""
        copied = super().model_copy(update=update, deep=deep)
        copied.__dict__.pop("resolved", None)
        return copied

    @property
    def sharing_profiles(self) -> tuple[GpuSharingSettings, ...]:
        """Distinct sharing setups in use, one device-plugin DaemonSet each, sorted by profile name."""
        used = {pool.sharing.profile: pool.sharing for pool in self.resolved.pools}
        return tuple(used[k] for k in sorted(used))

    @property
    def gpu_instance_types(self) -> tuple[str, ...]:
        return tuple(sorted({node.instance_type for pool in self.resolved.pools for node in pool.nodes}))

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
