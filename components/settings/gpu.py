"""`gpuNodes`, `gpuNodeGroup` and `gpuSharing`: how every GPU node is built, the managed GPU floor, GPU sharing."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import Field, model_validator

from components.settings.fields import GpuInstanceType, PinnedImage, ScalingSettings, SettingsModel

# gp3 limits (EC2 CreateVolume): 3,000-80,000 IOPS, 125-2,000 MiB/s, at most 500 IOPS per GiB
# and 0.25 MiB/s per provisioned IOPS.
GP3_IOPS_RANGE = (3000, 80000)
GP3_THROUGHPUT_RANGE = (125, 2000)
GP3_MAX_IOPS_PER_GIB = 500
GP3_MAX_MIBPS_PER_IOPS = 0.25

# nodeadm's FastImagePull (SOCI parallel pull) is slower than the default below this root-volume throughput:
# awslabs/amazon-eks-ami v20260724 nodeadm/doc/examples.md ("Enabling fast image pull").
FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS = 600

# Images GPU node userData pre-pulls at most (configured plus hub notebook images).
PRE_PULL_MAX = 10

# Kubelet --max-pods: the EKS guidance caps it at 110 below 30 vCPUs and 250 above.
MAX_PODS_RANGE = (10, 250)
POD_PIDS_LIMIT_RANGE = (1024, 4194304)


class RootVolumeSettings(SettingsModel):
    size_gib: Annotated[int, Field(ge=20, le=65536)] = 100
    """Size of the gp3 root volume, GiB."""
    iops: Annotated[int, Field(ge=GP3_IOPS_RANGE[0], le=GP3_IOPS_RANGE[1])] = 10000
    """Provisioned IOPS; at most 500 per GiB of sizeGib."""
    throughput_mibps: Annotated[int, Field(ge=GP3_THROUGHPUT_RANGE[0], le=GP3_THROUGHPUT_RANGE[1])] = 125
    """Throughput, MiB/s; at most iops / 4, and at least 600 with fastImagePull."""
    encrypted: bool = True
    """Must be true: GPU root volumes are always encrypted."""
    delete_on_termination: bool = True
    """Delete the volume with its node."""

    @model_validator(mode="after")
    def _gp3_ratios(self) -> Self:
        if not self.encrypted:
            raise ValueError("encrypted: must be true (GPU root volumes hold images and data; never unencrypted)")
        if self.iops > self.size_gib * GP3_MAX_IOPS_PER_GIB:
            raise ValueError(
                f"iops: {self.iops} needs at least {-(-self.iops // GP3_MAX_IOPS_PER_GIB)} GiB "
                f"(gp3 allows {GP3_MAX_IOPS_PER_GIB} IOPS per GiB; sizeGib is {self.size_gib})"
            )
        if self.throughput_mibps > self.iops * GP3_MAX_MIBPS_PER_IOPS:
            raise ValueError(
                f"throughputMibps: {self.throughput_mibps} needs at least {int(self.throughput_mibps / GP3_MAX_MIBPS_PER_IOPS)} "
                f"IOPS (gp3 allows {GP3_MAX_MIBPS_PER_IOPS} MiB/s per IOPS; iops is {self.iops})"
            )
        return self


class GpuNodeSettings(SettingsModel):
    """The GPU bootstrap shared by the managed GPU node group and every Karpenter GPU pool."""

    max_pods: Annotated[int, Field(ge=MAX_PODS_RANGE[0], le=MAX_PODS_RANGE[1])] = 110
    """kubelet maxPods; above the smallest GPU type's VPC CNI limit only with prefixDelegation."""
    pod_pids_limit: Annotated[int, Field(ge=POD_PIDS_LIMIT_RANGE[0], le=POD_PIDS_LIMIT_RANGE[1])] = 32768
    """kubelet podPidsLimit."""
    root_volume: RootVolumeSettings = RootVolumeSettings()
    """The gp3 root volume of every GPU node."""
    pre_pull_images: Annotated[list[PinnedImage], Field(max_length=PRE_PULL_MAX)] = []
    """Images pulled into containerd at boot, so the first GPU pod starts fast (the labs' hub images are added)."""
    fast_image_pull: bool = False
    """nodeadm FastImagePull (SOCI parallel pull and unpack); needs rootVolume.throughputMibps >= 600 and
    GPU instance types of at least 4 vCPUs and 7 GiB."""

    @model_validator(mode="after")
    def _fast_pull_throughput(self) -> Self:
        throughput = self.root_volume.throughput_mibps
        if self.fast_image_pull and throughput < FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS:
            raise ValueError(
                f"rootVolume.throughputMibps: {throughput} is below the {FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS} MiB/s "
                "nodeadm recommends for fastImagePull (slower than a plain pull below it); raise it or set fastImagePull: false"
            )
        return self


class GpuNodeGroupSettings(ScalingSettings):
    """The managed GPU node group (a fixed floor of GPU capacity; Karpenter adds the rest)."""

    enabled: bool = True
    """The EKS managed GPU node group: an always-on floor of GPU capacity."""
    instance_types: Annotated[list[GpuInstanceType], Field(min_length=1)] = ["g4dn.xlarge"]
    """Its instance types."""
    capacity_type: Literal["ON_DEMAND", "SPOT"] = "ON_DEMAND"
    """On-demand or spot instances."""
    min_size: Annotated[int, Field(ge=0, le=100)] = 1
    """Nodes at least."""
    desired_size: Annotated[int, Field(ge=0, le=100)] = 1
    """Nodes, at least 1 while enabled: nothing resizes the group (no cluster-autoscaler), so 0 would stay
    empty; to scale GPUs from zero, disable the group and use Karpenter pools."""
    max_size: Annotated[int, Field(ge=1, le=100)] = 1
    """Nodes at most; minSize <= desiredSize <= maxSize."""

    @model_validator(mode="after")
    def _has_a_floor(self) -> Self:
        # An EKS managed node group only changes size when something sets desiredSize: that is
        # cluster-autoscaler's job, and this platform runs Karpenter instead (it launches its own
        # NodeClaims, never resizes node groups). At 0/0 the group would stay empty forever.
        if self.enabled and self.desired_size == 0:
            raise ValueError(
                "minSize = desiredSize = 0 never scales (no cluster-autoscaler runs; Karpenter does not resize "
                "node groups): set desiredSize >= 1 for an always-on GPU floor, or enabled: false and let the "
                "Karpenter nodePools scale GPU capacity from zero"
            )
        return self


# --- GPU sharing -----------------------------------------------------------------------------

# The device plugin refuses replicas < 2 (crash loop); MPS serves at most 48 clients per GPU on compute
# capability >= 7.5 (T4 and newer; every GPU in the catalog): NVIDIA MPS docs, "Limitations" (48 client CUDA
# contexts per device on Volta and newer), enforced by the plugin's control daemon at v0.20.0
# (cmd/mps-control-daemon/mps/device.go, maxClients). The per-client cap's floor is a stack rule
# (checks/pools.py: sharing_fits_instance_types): it needs the pool's GPU memory.
MPS_MAX_REPLICAS = 48
TIME_SLICING_MAX_REPLICAS = 64


class GpuSharingSettings(SettingsModel):
    """`gpu-platform:gpuSharing`: how many pods share one physical GPU, and how."""

    strategy: Literal["time-slicing", "mps", "none"] = "time-slicing"
    """How pods share one physical GPU."""
    # Bounds depend on the strategy (_replicas_fit_strategy), so the first error gives the real range.
    replicas: int = 2  # 1 when strategy is "none" (see _default_replicas)
    """Pods per physical GPU: 2-64 with time-slicing, 2-48 with mps, 1 with none (its default there)."""
    fail_requests_greater_than_one: bool = True
    """Reject pods asking for more than one shared GPU (no real speed-up)."""

    @model_validator(mode="before")
    @classmethod
    def _default_replicas(cls, data: Any) -> Any:
        # Exclusive GPUs have exactly one "replica"; sharing strategies default to two pods per GPU.
        if isinstance(data, dict) and data.get("strategy") == "none" and "replicas" not in data:
            return {**data, "replicas": 1}
        return data

    @model_validator(mode="after")
    def _replicas_fit_strategy(self) -> Self:
        if self.strategy == "none" and self.replicas != 1:
            raise ValueError("replicas: must be 1 when strategy is 'none' (exclusive GPUs)")
        if self.strategy == "time-slicing" and not 2 <= self.replicas <= TIME_SLICING_MAX_REPLICAS:
            raise ValueError(
                f"replicas: must be 2..{TIME_SLICING_MAX_REPLICAS} for time-slicing (the plugin rejects < 2)"
            )
        if self.strategy == "mps" and not 2 <= self.replicas <= MPS_MAX_REPLICAS:
            raise ValueError(f"replicas: must be 2..{MPS_MAX_REPLICAS} for mps (MPS client limit per GPU)")
        return self

    @property
    def profile(self) -> str:
        """Stable name of this sharing setup: node label value and device-plugin object suffix."""
        if self.strategy == "none":
            return "exclusive"
        strict = "" if self.fail_requests_greater_than_one else "-lenient"
        return f"{self.strategy}-{self.replicas}{strict}"
