"""Typed settings for the whole stack: the one place stack configuration is read and checked.

Pulumi hands a program its configuration as a flat map of strings (`"gpu-platform:network"` ->
JSON text, `"aws:region"` -> `"us-west-1"`). `load_settings` turns that map into a frozen
`StackSettings` or raises `SettingsError`, which lists every offending key path with what is
allowed. Nothing here imports Pulumi: the synth, the program and the tests share it.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Annotated, Any, Literal, Self, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)
from pydantic.alias_generators import to_camel

from components import config_rules, cron, gpu_catalog, node_allocatable, quantity, timetable
from components.constants import (
    DEMO_POD_REQUESTS,
    KARPENTER_CONTROLLER_ROLE_SUFFIX,
    PLATFORM_SYSTEM_NAMESPACES,
    PROJECT,
    TIMETABLE_NAMESPACE,
)

SUPPORTED_KUBERNETES_VERSIONS = ("1.34", "1.35", "1.36")
SUPPORTED_REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1",
    "eu-west-1", "eu-west-2", "eu-central-1", "eu-north-1",
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2",
)  # fmt: skip
# EKS control-plane log types (enabled_cluster_log_types); pydantic names these in its error.
ControlPlaneLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]

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

# IAM role names are capped at 64 characters; the longest name derived from the cluster name
# is the Karpenter controller role's (21 extra characters).
LONGEST_DERIVED_SUFFIX = KARPENTER_CONTROLLER_ROLE_SUFFIX
IAM_NAME_MAX = 64
CLUSTER_NAME_MAX = IAM_NAME_MAX - len(LONGEST_DERIVED_SUFFIX)

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DURATION = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
# registry/repository with a tag, a digest, or both (`:tag@sha256:...`: the digest is what gets pulled).
_IMAGE_REF = re.compile(
    r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+(@sha256:[a-f0-9]{64})?|@sha256:[a-f0-9]{64})$"
)
_PRINCIPAL_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]{1,512}$")


class SettingsError(Exception):
    """A user mistake in stack configuration: one `(key path, what is allowed)` pair per problem."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"invalid stack configuration ({len(self.problems)} problem(s)):"]
        lines += [f"  {path}: {message}" for path, message in self.problems]
        return "\n".join(lines)


# --- field types ---------------------------------------------------------------------------


def _dns_label(value: str) -> str:
    """A DNS label: lowercase letters, digits and '-', at most 63 characters."""
    if len(value) > 63 or not _DNS_LABEL.match(value):
        raise ValueError("must be a DNS label: lowercase letters, digits and '-', 1-63 characters")
    return value


def _duration(value: str) -> str:
    """A duration like `30s`, `15m`, `120m`, `720h`, or `Never`."""
    if not _DURATION.match(value):
        raise ValueError("must be a duration like '30s', '15m', '120m', '720h' or 'Never'")
    return value


def _pinned_image(value: str) -> str:
    """A fully qualified image with a tag and/or a digest (`:latest` only with a digest)."""
    if not _IMAGE_REF.match(value):
        raise ValueError("must be a fully qualified image with a tag or digest, e.g. docker.io/org/image:1.2.3")
    if value.endswith(":latest"):
        raise ValueError("must be pinned: ':latest' is not allowed")
    return value


def _gpu_instance_type(value: str) -> str:
    """A known NVIDIA GPU instance type (components/gpu_catalog.py; see "GPU instance types")."""
    if value not in gpu_catalog.GPU_INSTANCE_TYPES:
        raise ValueError(
            f"'{value}' is not a known NVIDIA GPU instance type; allowed: {', '.join(gpu_catalog.GPU_INSTANCE_TYPES)}"
        )
    return value


def _gpu_family(value: str) -> str:
    """A known NVIDIA GPU family (components/gpu_catalog.py; see "GPU instance types")."""
    if value not in gpu_catalog.GPU_FAMILIES:
        raise ValueError(f"'{value}' is not a known NVIDIA GPU family; allowed: {', '.join(gpu_catalog.GPU_FAMILIES)}")
    return value


def _matching(pattern: str, words: str) -> AfterValidator:
    """A string check whose error says what is allowed in words (never the regex)."""
    compiled = re.compile(pattern)

    def check(value: str) -> str:
        if not compiled.fullmatch(value):
            raise ValueError(f"{words} (got {value!r})")
        return value

    check.__doc__ = words.removeprefix("must be ")  # what the configuration reference says is allowed
    return AfterValidator(check)


def _schedule(value: str) -> str:
    """A UTC cron schedule: five fields `minute hour day-of-month month day-of-week` (numbers, names like
    `mon-fri` or `jan`, ranges, lists, `*/n` steps), or a macro like `@daily`; no time zones."""
    try:
        return cron.check_schedule(value)
    except cron.CronError as exc:
        raise ValueError(f"{exc}; must be {cron.SCHEDULE_HELP}") from None


def _principal_arn(value: str) -> str:
    """An IAM role or user ARN, e.g. `arn:aws:iam::123456789012:role/platform-admin`."""
    if not _PRINCIPAL_ARN.match(value):
        raise ValueError("must be an IAM role or user ARN, e.g. arn:aws:iam::123456789012:role/platform-admin")
    return value


def _cidr(value: str) -> str:
    """An IPv4 CIDR block like `10.0.0.0/16`."""
    try:
        network = ipaddress.IPv4Network(value, strict=True)
    except ValueError as exc:
        raise ValueError(f"must be an IPv4 CIDR block like 10.0.0.0/16 ({exc})") from None
    return str(network)


def _tag_key(value: str) -> str:
    """1-128 characters, not starting with `aws:`."""
    if not 1 <= len(value) <= 128:
        raise ValueError("tag keys must be 1-128 characters")
    if value.lower().startswith("aws:"):
        raise ValueError(f"tag key '{value}': the 'aws:' prefix is reserved by AWS")
    return value


def _tag_value(value: Any) -> Any:
    """Text; whole numbers and booleans are taken as their text, a float must be quoted."""
    # AWS tag values are strings, but YAML reads `cost-center: 1234` as a number and `true` as a
    # boolean. Whole numbers and booleans have one spelling, so they are taken as text; a float
    # may not keep its spelling (1.50 -> 1.5), so it must be quoted.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        raise ValueError(
            f'YAML read {value!r} as a number, which may not keep its spelling: quote the value, e.g. "{value}"'
        )
    return value


def _region(value: str) -> str:
    if value not in SUPPORTED_REGIONS:
        raise ValueError(f"'{value}' is not supported; allowed: {', '.join(SUPPORTED_REGIONS)}")
    return value


_region.__doc__ = f"One of {', '.join(SUPPORTED_REGIONS)}."


def _cluster_name(value: str) -> str:
    if len(value) > CLUSTER_NAME_MAX or not re.match(r"^[a-zA-Z][a-zA-Z0-9-]*$", value):
        raise ValueError(
            f"must start with a letter, use letters, digits and '-', and be at most {CLUSTER_NAME_MAX} characters "
            f"(IAM names derived from it, like '<cluster>{LONGEST_DERIVED_SUFFIX}', are capped at {IAM_NAME_MAX})"
        )
    return value


_cluster_name.__doc__ = f"Letters, digits and '-', starting with a letter; at most {CLUSTER_NAME_MAX} characters."


def _kubernetes_version(value: str) -> str:
    if value not in SUPPORTED_KUBERNETES_VERSIONS:
        # An unquoted 1.30 reaches the program as "1.3" (YAML reads a number), hence the quoting hint.
        raise ValueError(
            f"'{value}' is not supported; allowed: {', '.join(SUPPORTED_KUBERNETES_VERSIONS)} (quote it, e.g. \"1.35\")"
        )
    return value


_kubernetes_version.__doc__ = f"One of {', '.join(SUPPORTED_KUBERNETES_VERSIONS)}, quoted."


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
Duration = Annotated[str, AfterValidator(_duration)]
PinnedImage = Annotated[str, AfterValidator(_pinned_image)]
GpuInstanceType = Annotated[str, AfterValidator(_gpu_instance_type)]
GpuFamily = Annotated[str, AfterValidator(_gpu_family)]
PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]
Cidr = Annotated[str, AfterValidator(_cidr)]
VpcId = Annotated[str, _matching(r"vpc-[0-9a-f]{8,17}", "must be a VPC id like vpc-0abc1234def567890")]
SubnetId = Annotated[str, _matching(r"subnet-[0-9a-f]{8,17}", "must be a subnet id like subnet-0abc1234def567890")]
InstanceType = Annotated[str, _matching(r"[a-z][a-z0-9-]*\.[a-z0-9]+", "must be an EC2 instance type like m6i.large")]
# Karpenter NodePool CRD patterns (karpenter.sh_nodepools.yaml v1.14.1), said in words.
BudgetNodes = Annotated[
    str, _matching(r"((100|[0-9]{1,2})%|[0-9]+)", 'must be a node count like "1" or a percentage like "10%"')
]
BudgetDuration = Annotated[
    str,
    _matching(
        r"(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?", "must be hours and/or minutes like 30m, 10h or 1h30m (no seconds)"
    ),
]
GracePeriod = Annotated[str, _matching(r"([0-9]+(s|m|h))+", "must be a duration like 30m, 1h or 1h30m")]


class _Model(BaseModel):
    """camelCase keys as in the stack YAML, unknown keys rejected, values immutable.

    Each field's attribute docstring (the string right under it) is its description in the generated
    configuration reference (`python -m offline.config_reference`, docs/configuration.md).
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, use_attribute_docstrings=True
    )


# --- network and cluster -------------------------------------------------------------------


class ExistingNetwork(_Model):
    vpc_id: VpcId
    """The existing VPC; the program only adds discovery tags to it."""
    private_subnet_ids: Annotated[list[SubnetId], Field(min_length=2)]
    """Its private subnets, where every node runs."""
    public_subnet_ids: list[SubnetId] = []
    """Its public subnets, if any."""


class NetworkSettings(_Model):
    vpc_cidr: Cidr = "10.0.0.0/16"
    """The VPC's CIDR, /16 to /20: private subnets get eighths, public subnets share the last eighth."""
    availability_zones: Annotated[int, Field(ge=2, le=4)] = 2
    """Zones to spread over: one private and one public subnet each."""
    nat_gateways: Literal["single", "one-per-az"] = "single"
    """Egress NAT gateways: one (cheap) or one per zone (survives a zone outage)."""
    existing: ExistingNetwork | None = None
    """Use an existing VPC instead (then without vpcCidr, availabilityZones, natGateways)."""

    @model_validator(mode="after")
    def _vpc_large_enough(self) -> Self:
        prefix = ipaddress.IPv4Network(self.vpc_cidr).prefixlen
        if not 16 <= prefix <= 20:
            raise ValueError(f"vpcCidr: prefix /{prefix} is not allowed; use /16 to /20 (subnets are carved from it)")
        return self


class VpcCniSettings(_Model):
    prefix_delegation: bool = True
    """/28 prefixes per ENI, so small GPU nodes can run `gpuNodes.maxPods` pods."""


class ClusterSettings(_Model):
    # Private by default: a public endpoint must be asked for, and then only for listed CIDRs.
    endpoint_public_access: bool = False
    """A public API endpoint (the private one is always on), for publicAccessCidrs only."""
    public_access_cidrs: list[Cidr] = []
    """Who may reach the public endpoint (not 0.0.0.0/0); required while it is on."""
    admin_principal_arns: list[PrincipalArn] = []
    """Cluster admins (AmazonEKSClusterAdminPolicy access entries, keyed by a slug of the ARN); each once,
    not the deployer."""
    # Who runs `pulumi up`: EKS makes it cluster admin itself (see components/renderers/access_entries.py).
    deployer_principal_arn: PrincipalArn | None = None
    """Who runs `pulumi up`: EKS makes it cluster admin as the cluster creator; `preview`/`up` warn when
    the caller differs or this is unset."""
    viewer_principal_arns: list[PrincipalArn] = []
    """Principals with cluster-wide read access (AmazonEKSAdminViewPolicy, cluster scope), e.g. the PR preview
    role, which `pulumi preview --refresh` needs to read Kubernetes resources; IAM role or user ARNs, each once,
    none of them the deployer or an admin (one access entry per principal)."""
    log_types: list[ControlPlaneLogType] = [
        "api", "audit", "authenticator",
    ]  # fmt: skip
    """Control-plane logs sent to CloudWatch."""
    vpc_cni: VpcCniSettings = VpcCniSettings()
    """The VPC CNI add-on."""

    @model_validator(mode="after")
    def _public_endpoint_is_restricted(self) -> Self:
        arns = self.admin_principal_arns
        repeat = next((i for i, arn in enumerate(arns) if arn in arns[:i]), None)
        if repeat is not None:
            raise ValueError(
                f"adminPrincipalArns[{repeat}]: each principal once (EKS allows one access entry per principal): "
                f"{arns[repeat]} repeats adminPrincipalArns[{arns.index(arns[repeat])}]"
            )
        if self.deployer_principal_arn in self.admin_principal_arns:
            raise ValueError(
                f"adminPrincipalArns: lists {self.deployer_principal_arn}, which is also "
                "gpu-platform:cluster.deployerPrincipalArn; remove it from adminPrincipalArns: pulumi-eks always "
                "has EKS create the cluster creator's admin access entry, and a second entry for the same "
                "principal fails with 409 ResourceInUseException"
            )
        self._viewers_once()
        if self.endpoint_public_access and not self.public_access_cidrs:
            raise ValueError(
                "publicAccessCidrs: must list at least one CIDR while endpointPublicAccess is true "
                "(the public endpoint is never left open to the internet by default)"
            )
        if "0.0.0.0/0" in self.public_access_cidrs:
            raise ValueError("publicAccessCidrs: 0.0.0.0/0 is not allowed; list your egress CIDRs")
        return self

    def _viewers_once(self) -> None:
        viewers = self.viewer_principal_arns
        for index, arn in enumerate(viewers):
            if arn in viewers[:index]:
                raise ValueError(
                    f"viewerPrincipalArns[{index}]: each principal once (EKS allows one access entry per principal): "
                    f"{arn} repeats viewerPrincipalArns[{viewers.index(arn)}]"
                )
            if arn == self.deployer_principal_arn:
                raise ValueError(
                    f"viewerPrincipalArns[{index}]: {arn} is also gpu-platform:cluster.deployerPrincipalArn, already "
                    "cluster admin through the cluster-creator entry; remove it from viewerPrincipalArns (a second "
                    "entry for the same principal fails with 409 ResourceInUseException)"
                )
            if arn in self.admin_principal_arns:
                raise ValueError(
                    f"viewerPrincipalArns[{index}]: {arn} is also gpu-platform:cluster.adminPrincipalArns"
                    f"[{self.admin_principal_arns.index(arn)}]; a principal is admin or viewer, not both: "
                    "remove it from one list"
                )


class _ScalingSettings(_Model):
    min_size: Annotated[int, Field(ge=0, le=100)]
    desired_size: Annotated[int, Field(ge=0, le=100)]
    max_size: Annotated[int, Field(ge=1, le=100)]

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if not self.min_size <= self.desired_size <= self.max_size:
            # Name the key to change: maxSize when the bounds cross, else desiredSize.
            key = "maxSize" if self.min_size > self.max_size else "desiredSize"
            raise ValueError(
                f"{key}: must satisfy minSize <= desiredSize <= maxSize "
                f"(got {self.min_size}, {self.desired_size}, {self.max_size})"
            )
        return self


class SystemNodeGroupSettings(_ScalingSettings):
    instance_types: Annotated[list[InstanceType], Field(min_length=1)] = ["m6i.large"]
    """Instance types of the system node group (Karpenter, CoreDNS)."""
    min_size: Annotated[int, Field(ge=2, le=100)] = 2
    """Nodes at least: two, for Karpenter's two zone-spread replicas."""
    desired_size: Annotated[int, Field(ge=2, le=100)] = 2
    """Nodes at creation; minSize <= desiredSize <= maxSize."""
    max_size: Annotated[int, Field(ge=2, le=100)] = 4
    """Nodes at most."""


# --- GPU nodes -------------------------------------------------------------------------------


class RootVolumeSettings(_Model):
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


class GpuNodeSettings(_Model):
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


class GpuNodeGroupSettings(_ScalingSettings):
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

# The device plugin refuses replicas < 2 (crash loop); MPS serves at most 48 clients per GPU
# on compute capability >= 7.5 (T4 and newer; every GPU in the catalog).
MPS_MAX_REPLICAS = 48
TIME_SLICING_MAX_REPLICAS = 64


class GpuSharingSettings(_Model):
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


# --- Karpenter ---------------------------------------------------------------------------------


class DisruptionBudget(_Model):
    nodes: BudgetNodes
    """Nodes Karpenter may disrupt at once (quote a count: "1")."""
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = None
    """Disruption reasons the budget applies to; unset: all."""
    # Parsed as cron in UTC, as Karpenter does at runtime (components/cron.py).
    schedule: Annotated[str, AfterValidator(_schedule)] | None = None
    """When each window starts, in UTC; requires duration; unset: always active. Prod's `0 15 * * mon-fri`
    with `11h` covers 08:00-18:00 US Pacific in both PST and PDT."""
    duration: BudgetDuration | None = None
    """How long each window lasts; requires schedule."""

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> Self:
        # The NodePool CRD's CEL rule: has(x.schedule) == has(x.duration).
        if self.schedule is not None and self.duration is None:
            raise ValueError("duration: required with schedule (how long each window lasts, e.g. 10h)")
        if self.duration is not None and self.schedule is None:
            raise ValueError(f"schedule: required with duration (when each window starts: {cron.SCHEDULE_HELP})")
        return self


class WarmSlotShape(_Model):
    """CPU and memory one warm shared-GPU slot reserves: what a typical lab pod requests."""

    cpu_millicores: Annotated[int, Field(ge=10, le=192000)]
    """CPU one warm slot reserves, millicores."""
    memory_mib: Annotated[int, Field(ge=16, le=2097152)]
    """Memory one warm slot reserves, MiB."""


# A lab notebook pod: one core, 4 GiB. Pools whose nodes cannot hold GPUs x replicas of these get less.
TYPICAL_WARM_SLOT = WarmSlotShape(cpu_millicores=1000, memory_mib=4096)
WARM_SLOT_FLOOR = WarmSlotShape(cpu_millicores=100, memory_mib=256)


class CapacityReservationTerm(_Model):
    """One EC2NodeClass capacityReservationSelectorTerm: an On-Demand Capacity Reservation or Capacity Block."""

    id: (
        Annotated[str, _matching(r"cr-[0-9a-z]+", "must be a capacity reservation id like cr-0123456789abcdef0")] | None
    ) = None
    """A capacity reservation (or Capacity Block) id, e.g. cr-0123456789abcdef0; exactly one of id and tags."""
    tags: (
        Annotated[
            dict[Annotated[str, Field(min_length=1)], Annotated[str, Field(min_length=1)]],
            Field(min_length=1, max_length=20),
        ]
        | None
    ) = None
    """Tags every selected reservation carries (1-20, '*' matches any value); exactly one of id and tags."""

    @model_validator(mode="after")
    def _one_of(self) -> Self:
        if (self.id is None) == (self.tags is None):
            raise ValueError("set exactly one of id or tags")
        return self


class NodePoolSettings(_Model):
    name: DnsLabel
    """The NodePool's and its EC2NodeClass's name; unique."""
    instance_families: list[GpuFamily] = []
    """GPU families the pool may launch; set this or instanceTypes, not both."""
    instance_types: list[GpuInstanceType] = []
    """GPU instance types the pool may launch; set this or instanceFamilies, not both."""
    capacity_types: Annotated[list[Literal["on-demand", "spot"]], Field(min_length=1)] = ["on-demand"]
    """On-demand and/or spot."""
    architectures: Annotated[list[Literal["amd64"]], Field(min_length=1)] = ["amd64"]
    """CPU architectures (every catalog GPU type is x86_64)."""
    gpu_limit: Annotated[int, Field(ge=1, le=1000)] = 4
    """NodePool limit: physical GPUs."""
    cpu_limit: Annotated[int, Field(ge=1, le=100000)] = 64
    """NodePool limit: vCPUs."""
    expire_after: Duration = "720h"
    """Node lifetime before Karpenter replaces the node."""
    termination_grace_period: GracePeriod = "1h"
    """How long a draining node waits for its pods before they are forced off."""
    # WhenEmpty by default: consolidating an underutilized GPU node evicts running GPU jobs.
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = "WhenEmpty"
    """When Karpenter consolidates; consolidating an underutilized GPU node evicts GPU jobs."""
    consolidate_after: Duration = "5m"
    """How long a node stays consolidatable before Karpenter acts."""
    disruption_budgets: Annotated[list[DisruptionBudget], Field(min_length=1, max_length=50)] = [
        DisruptionBudget(nodes="1")
    ]
    """How many nodes Karpenter may disrupt at once, and when (schedules in UTC)."""
    weight: Annotated[int, Field(ge=1, le=100)] = 10
    """Priority among pools (higher first)."""
    gpu_sharing: GpuSharingSettings | None = None
    """This pool's GPU sharing (e.g. 4 on A10G, 3 on T4); unset: the stack's gpuSharing."""
    warm_gpu_slots: Annotated[int, Field(ge=0, le=10000)] = 0
    """Shared nvidia.com/gpu slots kept free at all times (a CapacityBuffer); at most gpuLimit x replicas,
    and the nodes holding them within cpuLimit and gpuLimit on some type of the pool; 0: none."""
    warm_slot_shape: WarmSlotShape | None = None
    """CPU and memory one warm slot reserves (needs warmGpuSlots > 0); unset: a typical lab pod (1000m,
    4096 MiB), shrunk until GPUs x replicas slots fit every instance type of the pool."""
    capacity_reservations: Annotated[list[CapacityReservationTerm], Field(max_length=30)] = []
    """EC2 capacity reservations the pool launches into first ([{id} | {tags}], at most 30): the EC2NodeClass's
    capacityReservationSelectorTerms and the `reserved` capacity type in the pool's requirements."""

    @model_validator(mode="after")
    def _one_selector(self) -> Self:
        if bool(self.instance_families) == bool(self.instance_types):
            raise ValueError("set exactly one of instanceFamilies or instanceTypes")
        return self

    @property
    def selected_instance_types(self) -> tuple[str, ...]:
        if self.instance_types:
            return tuple(sorted(set(self.instance_types)))
        return tuple(sorted({t for f in self.instance_families for t in gpu_catalog.instance_types_of_family(f)}))


class KarpenterSettings(_Model):
    enabled: bool = True
    """Karpenter, its IAM, interruption queue and node pools."""
    replicas: Annotated[int, Field(ge=1, le=5)] = 2
    """Controller replicas (a PDB keeps one up); at most systemNodes.minSize."""
    node_pools: Annotated[list[NodePoolSettings], Field(max_length=100)] = []
    """GPU node pools: a NodePool and EC2NodeClass (and NodeOverlays) each; unique names."""

    @model_validator(mode="after")
    def _unique_pool_names(self) -> Self:
        names = [p.name for p in self.node_pools]
        repeat = next((i for i, n in enumerate(names) if n in names[:i]), None)
        if repeat is not None:
            raise ValueError(
                f"nodePools[{repeat}].name: names must be unique (repeated: {names[repeat]}, "
                f"first used by nodePools[{names.index(names[repeat])}])"
            )
        return self


# Namespaces the cluster owns: the demo creates its namespace and enforces the `restricted` Pod
# Security Standard on it, which would reject the device plugin's hostPath pods in kube-system.
# Namespaces a lab or the demo may never take: the cluster's own, and where the platform's agents run
# (the GPU admission guard exempts those, and their Pod Security level is not `restricted`).
RESERVED_NAMESPACES = tuple(
    dict.fromkeys(
        ("default", "kube-system", "kube-public", "kube-node-lease", *PLATFORM_SYSTEM_NAMESPACES, TIMETABLE_NAMESPACE)
    )
)


def _workload_namespace(value: str) -> str:
    if value in RESERVED_NAMESPACES or value.startswith("kube-"):
        raise ValueError(
            f"'{value}' is a system namespace; use a namespace of its own (not {', '.join(RESERVED_NAMESPACES)}, "
            "nor any 'kube-' name)"
        )
    return value


_workload_namespace.__doc__ = f"Not a system namespace ({', '.join(RESERVED_NAMESPACES)}, nor any `kube-` name)."


class DemoSettings(_Model):
    enabled: bool = False
    """The learning-lab demo Deployment on shared GPUs (`up` does not wait for its pods)."""
    namespace: Annotated[DnsLabel, AfterValidator(_workload_namespace)] = "learning-lab"
    """Its namespace: one of the labs when labs are set, else its own with a deny-all NetworkPolicy."""
    replicas: Annotated[int, Field(ge=1, le=50)] = 3
    """Demo pods, each requesting nvidia.com/gpu: 1."""
    image: PinnedImage = "docker.io/tensorflow/tensorflow:2.12.0-gpu"
    """The demo's container image."""


# --- observability -----------------------------------------------------------------------------

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-zA-Z]{2,}$")
# SNS subscription endpoints an alarm can reach without a confirmation link: SQS queues and Lambda functions.
_SUBSCRIBER_ARN = re.compile(r"^arn:aws(-[a-z]+)*:(sqs|lambda):[a-z0-9-]+:[0-9]{12}:[\w:.-]+$")


def _alarm_subscriber(value: str) -> str:
    """An e-mail address, or an SQS queue or Lambda function ARN."""
    if not (_EMAIL.match(value) or _SUBSCRIBER_ARN.match(value)):
        raise ValueError(
            f"'{value}' must be an e-mail address or an SQS queue / Lambda function ARN "
            "(e.g. ops@example.com, arn:aws:sqs:us-west-2:123456789012:gpu-alerts)"
        )
    return value


class ObservabilitySettings(_Model):
    """`gpu-platform:observability`: GPU health signals and repair, GPU metrics, dashboard and alarms."""

    gpu_metrics: bool = False
    """CloudWatch Observability add-on (Container Insights, NVIDIA GPU metrics), GPU dashboard, alarms."""
    node_repair: bool = False
    """EKS node monitoring agent, Karpenter node repair, EKS node auto repair on the managed groups."""
    idle_gpu_threshold_percent: Annotated[int, Field(ge=1, le=100)] = 10
    """Idle-GPU alarm: more GPU nodes run than the managed floor, warm slots and demo hold, and the busiest
    GPU stays below this utilisation for idleGpuHours; needs gpuMetrics."""
    idle_gpu_hours: Annotated[int, Field(ge=1, le=72)] = 4
    """Hours the idle-GPU alarm waits; needs gpuMetrics."""
    stuck_gpu_node_minutes: Annotated[int, Field(ge=10, le=1440)] = 30
    """Stuck-GPU-node alarm: a GPU node advertises no nvidia.com/gpu this long; needs gpuMetrics."""
    alarm_subscribers: Annotated[list[Annotated[str, AfterValidator(_alarm_subscriber)]], Field(max_length=20)] = []
    """SNS subscribers of the alarm topic: e-mails must confirm, queues and functions need a policy allowing
    SNS; needs gpuMetrics."""

    @model_validator(mode="after")
    def _subscribers_once(self) -> Self:
        # (Subscribers, like the alarm settings, are rejected without gpuMetrics: config_rules._DEPENDENT_KEYS.)
        repeated = sorted({s for s in self.alarm_subscribers if self.alarm_subscribers.count(s) > 1})
        if repeated:
            raise ValueError(f"alarmSubscribers: each subscriber once (repeated: {', '.join(repeated)})")
        return self


# --- learning labs -----------------------------------------------------------------------------

# --- a lab's JupyterHub ----------------------------------------------------------------------------

# An image pinned by digest (the tag is for humans): what the hub spawns and every GPU node pre-pulls.
_DIGEST_IMAGE = re.compile(r"^[a-z0-9.-]+(:[0-9]+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+)?@sha256:[a-f0-9]{64}$")
_ACM_CERTIFICATE_ARN = re.compile(r"^arn:aws(-[a-z]+)*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[0-9a-f-]{36}$")
_HUB_USERNAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,63}$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,63}$")
# What a `secure:` value reads as when it cannot be decrypted (the offline synth): no length to check.
REDACTED_SECRET = "[secret]"
# JupyterHub 5.5.0 jupyterhub/authenticators/shared.py: _USER_PASSWORD_MIN_LENGTH, _ADMIN_PASSWORD_MIN_LENGTH.
SHARED_PASSWORD_MIN_LENGTH = 8
ADMIN_PASSWORD_MIN_LENGTH = 32


def _digest_image(value: str) -> str:
    if not _DIGEST_IMAGE.match(value):
        raise ValueError(
            "must be an image pinned by digest, e.g. quay.io/jupyter/pytorch-notebook:cuda12-2025-06-02@sha256:<64 hex> "
            f"(got {value!r})"
        )
    return value


def _secret_of_length(minimum: int) -> AfterValidator:
    def check(value: str) -> str:
        if value != REDACTED_SECRET and len(value) < minimum:
            raise ValueError(f"must be at least {minimum} characters (JupyterHub refuses a shorter one)")
        return value

    return AfterValidator(check)


HubUsername = Annotated[
    str, _matching(_HUB_USERNAME.pattern, "must be a JupyterHub username: letters, digits, '.', '_', '@', '-'")
]
Hostname = Annotated[str, _matching(_HOSTNAME.pattern, "must be a lowercase DNS name like hub.example.org")]
HttpsUrl = Annotated[str, _matching(r"https://[^\s]+", "must be an https:// URL")]


class SharedPasswordAuth(_Model):
    """One password for every learner (JupyterHub 5's `shared-password` authenticator): one-off workshops."""

    type: Literal["sharedPassword"]
    password: Annotated[str, _secret_of_length(SHARED_PASSWORD_MIN_LENGTH)]
    """The learners' password; a `secure:` value of at least 8 characters."""
    admin_password: Annotated[str, _secret_of_length(ADMIN_PASSWORD_MIN_LENGTH)] | None = None
    """The password `hub.adminUsers` log in with (required with them); a `secure:` value of at least 32 characters."""


class GithubAuth(_Model):
    """GitHub login (oauthenticator's `github`), limited to organisations or teams."""

    type: Literal["github"]
    client_id: Annotated[str, Field(min_length=1, max_length=128)]
    """The GitHub OAuth app's client ID."""
    client_secret: Annotated[str, Field(min_length=1)]
    """The GitHub OAuth app's client secret; a `secure:` value."""
    allowed_organizations: Annotated[
        list[Annotated[str, _matching(r"[A-Za-z0-9-]+(:[A-Za-z0-9_.-]+)?", "must be 'org' or 'org:team-slug'")]],
        Field(min_length=1, max_length=50),
    ]
    """Who may log in: GitHub organisations (`org`) or teams (`org:team-slug`)."""


class OidcAuth(_Model):
    """Generic OAuth2 / OpenID Connect login (oauthenticator's `generic-oauth`), e.g. Amazon Cognito."""

    type: Literal["oidc"]
    client_id: Annotated[str, Field(min_length=1, max_length=256)]
    """The identity provider app client's ID."""
    client_secret: Annotated[str, Field(min_length=1)]
    """The app client's secret; a `secure:` value."""
    authorize_url: HttpsUrl
    """The provider's authorization endpoint (https)."""
    token_url: HttpsUrl
    """The provider's token endpoint (https)."""
    userdata_url: HttpsUrl
    """The provider's userinfo endpoint (https)."""
    username_claim: Annotated[str, Field(min_length=1, max_length=64)] = "email"
    """The userinfo claim used as the JupyterHub username."""
    groups_claim: Annotated[str, Field(min_length=1, max_length=64)] = "groups"
    """The userinfo claim listing the user's groups."""
    allowed_groups: Annotated[list[Annotated[str, Field(min_length=1, max_length=128)]], Field(min_length=1)]
    """Who may log in: members of these provider groups."""


HubAuth = Annotated[SharedPasswordAuth | GithubAuth | OidcAuth, Field(discriminator="type")]
HUB_AUTH_TYPES = ("sharedPassword", "github", "oidc")
# Config paths (under `gpu-platform:labs[i].hub.auth`) that hold a secret, and only these.
HUB_SECRET_FIELDS = ("password", "adminPassword", "clientSecret")


class HubSettings(_Model):
    """A lab's JupyterHub (zero-to-jupyterhub chart 4.4.0 in the lab's namespace): off unless present."""

    auth: HubAuth
    """How learners log in: `type` sharedPassword, github or oidc (docs/jupyterhub.md)."""
    admin_users: Annotated[list[HubUsername], Field(max_length=50)] = []
    """JupyterHub usernames with hub admin rights (instructors)."""
    hostname: Hostname | None = None
    """The DNS name learners open (a CNAME to the load balancer); required for github and oidc login."""
    certificate_arn: (
        Annotated[str, _matching(_ACM_CERTIFICATE_ARN.pattern, "must be an ACM certificate ARN")] | None
    ) = None
    """ACM certificate for TLS on the load balancer, in the stack's region; required unless `internal`."""
    internal: bool = False
    """true: an internal load balancer (reachable from the VPC only) instead of an internet-facing one."""
    image: Annotated[str, AfterValidator(_digest_image)]
    """The notebook image, pinned by digest; GPU nodes pre-pull it."""
    idle_minutes: Annotated[int, Field(ge=5, le=1440)] = 30
    """Minutes without activity after which a notebook is stopped and its GPU slot freed (5-1440)."""
    max_hours: Annotated[int, Field(ge=1, le=168)] = 8
    """Hours after which a notebook is stopped however busy (1-168)."""
    pools: Annotated[list[DnsLabel], Field(max_length=20)] | None = None
    """Karpenter node pools offered as GPU profiles; default: every pool."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if not self.internal and self.certificate_arn is None:
            raise ValueError("certificateArn: required for an internet-facing hub (or set internal: true)")
        if self.auth.type in ("github", "oidc") and self.hostname is None:
            raise ValueError(f"hostname: required with auth.type {self.auth.type} (the OAuth callback URL)")
        if isinstance(self.auth, SharedPasswordAuth):
            if self.admin_users and self.auth.admin_password is None:
                raise ValueError("auth.adminPassword: required with adminUsers (JupyterHub's shared-password login)")
            if self.auth.admin_password is not None and not self.admin_users:
                raise ValueError("auth.adminPassword: set adminUsers too, or remove it")
        repeated = sorted({u for u in self.admin_users if self.admin_users.count(u) > 1})
        if repeated:
            raise ValueError(f"adminUsers: each user once: {repeated}")
        if self.pools is not None:
            repeated = sorted({p for p in self.pools if self.pools.count(p) > 1})
            if repeated or not self.pools:
                raise ValueError(f"pools: at least one pool, each once (repeated: {repeated})")
        return self

    @property
    def max_seconds(self) -> int:
        return self.max_hours * 3600


_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti)?$")


def _quantity(value: str) -> str:
    """A Kubernetes quantity (components/quantity.py: decimal and binary suffixes, e.g. `16`, `500m`, `64Gi`, `64G`)."""
    quantity.parse(value)  # ValueError naming the grammar (decimal suffixes like 64G included)
    return value


def _session_schedule(value: str) -> str:
    timetable.session_starts(value)
    return value


def _session_duration(value: str) -> str:
    seconds = timetable.parse_seconds(value) if re.fullmatch(r"([0-9]+h)?([0-9]+m)?", value) and value else None
    if seconds is None or seconds % 60 or not 0 < seconds <= timetable.MAX_SESSION_SECONDS:
        raise ValueError(
            f"must be hours and/or minutes like 2h, 90m or 1h30m, at most "
            f"{timetable.MAX_SESSION_SECONDS // 3600}h (got {value!r})"
        )
    return value


class LabSession(_Model):
    """One weekly class of a lab: when it starts (in its own time zone), how long it lasts, who comes."""

    schedule: Annotated[str, AfterValidator(_session_schedule)]
    """Weekly start in `timezone`: 'minute hour * * days' with one minute and one hour, e.g. '0 17 * * tue,thu'."""
    timezone: Annotated[str, AfterValidator(timetable.check_timezone)]
    """IANA time zone of `schedule`, e.g. America/Los_Angeles; the CronJobs' `spec.timeZone`."""
    duration: Annotated[str, AfterValidator(_session_duration)]
    """How long the class lasts: hours and/or minutes (2h, 90m, 1h30m), at most 12h."""
    learners: Annotated[int, Field(ge=1, le=10000)]
    """Learners attending, each holding one shared GPU slot; at most the lab's gpuSlots."""
    node_pool: DnsLabel | None = None
    """The karpenter.nodePools[].name whose warm headroom the session raises; optional with a single pool."""

    @property
    def duration_minutes(self) -> int:
        seconds = timetable.parse_seconds(self.duration)
        assert seconds is not None
        return seconds // 60


class LabSettings(_Model):
    """One learning lab: its namespace (= name), the shared GPU slots it may hold, its people."""

    name: Annotated[DnsLabel, AfterValidator(_workload_namespace)]
    """The lab's name and namespace; unique."""
    gpu_slots: Annotated[int, Field(ge=1, le=10000)]
    """Shared GPU slots the lab may hold at once: its ResourceQuota's requests.nvidia.com/gpu."""
    members: Annotated[list[PrincipalArn], Field(max_length=100)] = []
    """Who gets AmazonEKSEditPolicy in the lab's namespace; each once, not a cluster admin nor the deployer."""
    # ResourceQuota on requests.cpu and requests.memory (requests only: lab_manifests.CONTAINER_DEFAULT_REQUESTS).
    cpu: Annotated[str, AfterValidator(_quantity)] = "16"
    """ResourceQuota requests.cpu."""
    memory: Annotated[str, AfterValidator(_quantity)] = "64Gi"
    """ResourceQuota requests.memory."""
    sessions: Annotated[list[LabSession], Field(max_length=20)] = []
    """The lab's weekly timetable (docs/timetable.md): warm GPUs before each session, no disruption during it."""
    hub: HubSettings | None = None
    """The lab's JupyterHub: learners log in and pick a shared GPU slot (docs/jupyterhub.md); off unless present."""

    @model_validator(mode="after")
    def _members_once(self) -> Self:
        repeated = sorted({arn for arn in self.members if self.members.count(arn) > 1})
        if repeated:
            raise ValueError(f"members: each principal once: {repeated}")
        for index, session in enumerate(self.sessions):
            if session.learners > self.gpu_slots:
                raise ValueError(
                    f"sessions[{index}].learners: {session.learners} exceeds the lab's gpuSlots {self.gpu_slots} "
                    "(each learner holds one shared GPU slot of the lab's quota)"
                )
        return self


# --- the stack ---------------------------------------------------------------------------------


class StackSettings(_Model):
    """Everything one stack configures. Field aliases are the `gpu-platform:<key>` names."""

    region: Annotated[str, AfterValidator(_region)]  # from aws:region
    """Where everything is created (read from `aws:region`)."""
    cluster_name: Annotated[str, AfterValidator(_cluster_name)]
    """EKS cluster name, Karpenter discovery tag value, prefix of IAM and SQS names."""
    kubernetes_version: Annotated[str, AfterValidator(_kubernetes_version)]
    """EKS Kubernetes minor version (standard support only)."""
    protect_resources: bool = False
    """Protect the cluster, VPC, KMS key and interruption queue; EKS deletion protection."""
    tags: dict[
        Annotated[str, AfterValidator(_tag_key)], Annotated[str, BeforeValidator(_tag_value), Field(max_length=256)]
    ] = {}
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

    def sharing_for(self, pool: NodePoolSettings | None) -> GpuSharingSettings:
        """Sharing of one Karpenter pool (its override, else the stack default); None = managed group."""
        return pool.gpu_sharing if pool is not None and pool.gpu_sharing else self.gpu_sharing

    def warm_slot_shape_for(self, pool: NodePoolSettings) -> WarmSlotShape:
        """One warm slot's CPU and memory: the pool's setting, else the largest share up to a typical lab pod
        that lets every node of the pool hold all its slots (GPUs x replicas) after system reservations."""
        if pool.warm_slot_shape is not None:
            return pool.warm_slot_shape
        cpu, memory = TYPICAL_WARM_SLOT.cpu_millicores, TYPICAL_WARM_SLOT.memory_mib
        for instance_type in pool.selected_instance_types:
            slots = self.slots_per_node(pool, instance_type)
            room = self.pool_node_allocatable(pool, instance_type)
            cpu = min(cpu, room.cpu_millicores // slots // 50 * 50)  # round down to 50m
            memory = min(memory, room.memory_mib // slots // 64 * 64)  # and to 64 MiB
        return WarmSlotShape(cpu_millicores=max(cpu, 10), memory_mib=max(memory, 16))

    def pool_node_allocatable(self, pool: NodePoolSettings, instance_type: str) -> node_allocatable.Allocatable:
        """What one node of this pool offers pods once the DaemonSets these settings run on it are placed."""
        daemonsets = node_allocatable.daemonset_requests(
            gpu_metrics=self.observability.gpu_metrics,
            node_repair=self.observability.node_repair,
            mps=self.sharing_for(pool).strategy == "mps",
        )
        return node_allocatable.pod_allocatable(instance_type, max_pods=self.gpu_nodes.max_pods, daemonsets=daemonsets)

    def slots_per_node(self, pool: NodePoolSettings, instance_type: str) -> int:
        """Shared `nvidia.com/gpu` slots one node of this type offers in this pool (GPUs x replicas)."""
        return gpu_catalog.gpu_count(instance_type) * self.sharing_for(pool).replicas

    # --- the lab timetable (components/timetable.py, docs/timetable.md) ---

    def session_pool(self, session: LabSession) -> NodePoolSettings | None:
        """The Karpenter pool a session warms: its nodePool, else the stack's only pool (None: unresolved)."""
        pools = self.karpenter.node_pools if self.karpenter.enabled else []
        if session.node_pool is None:
            return pools[0] if len(pools) == 1 else None
        return next((pool for pool in pools if pool.name == session.node_pool), None)

    def sessions_on(self, pool: NodePoolSettings) -> tuple[timetable.Session, ...]:
        """Every lab session this pool serves, in config order."""
        found = []
        for i, lab in enumerate(self.labs):
            for j, session in enumerate(lab.sessions):
                served_by = self.session_pool(session)
                if served_by is not None and served_by.name == pool.name:
                    found.append(
                        timetable.Session(
                            lab=lab.name,
                            key=f"labs.{i}.sessions.{j}",
                            pool=pool.name,
                            schedule=session.schedule,
                            timezone=session.timezone,
                            duration_minutes=session.duration_minutes,
                            learners=session.learners,
                        )
                    )
        return tuple(found)

    def timetable_lead_minutes(self, pool: NodePoolSettings) -> int:
        """How long before a session the pool's buffer is raised: the modelled time to GPU, rounded up."""
        nodes = self.gpu_nodes
        return timetable.lead_minutes_for(pre_pulls=bool(nodes.pre_pull_images), fast_image_pull=nodes.fast_image_pull)

    def session_hold_seconds(self, pool: NodePoolSettings) -> int:
        """The longest a node of this pool must keep one session pod alive (0: the pool serves no session).

        The one place this is computed: a session pod may land from the lead time on and must live to the
        session's end. A hub's notebooks are held for their maximum server age: `node_hold_seconds`.
        """
        lead = self.timetable_lead_minutes(pool)
        return max(((lead + s.duration_minutes) * 60 for s in self.sessions_on(pool)), default=0)

    def node_hold_seconds(self, pool: NodePoolSettings) -> int:
        """The longest a node of this pool must keep one lab pod alive: a session's, or a hub notebook's max age."""
        hubs = [lab.hub for lab in self.labs if lab.hub is not None and pool in self.hub_pools(lab.hub)]
        return max([self.session_hold_seconds(pool), *(hub.max_seconds for hub in hubs)])

    @property
    def sharing_profiles(self) -> tuple[GpuSharingSettings, ...]:
        """Distinct sharing setups in use, one device-plugin DaemonSet each, sorted by profile name."""
        used: dict[str, GpuSharingSettings] = {}
        if self.gpu_node_group.enabled:
            used[self.gpu_sharing.profile] = self.gpu_sharing
        if self.karpenter.enabled:
            for pool in self.karpenter.node_pools:
                sharing = self.sharing_for(pool)
                used[sharing.profile] = sharing
        return tuple(used[k] for k in sorted(used))

    @property
    def gpu_instance_types(self) -> tuple[str, ...]:
        types = set(self.gpu_node_group.instance_types) if self.gpu_node_group.enabled else set()
        if self.karpenter.enabled:
            for pool in self.karpenter.node_pools:
                types.update(pool.selected_instance_types)
        return tuple(sorted(types))

    @model_validator(mode="after")
    def _cross_checks(self) -> Self:
        if not self.cluster.vpc_cni.prefix_delegation:
            limit = min((gpu_catalog.eni_max_pods(t) for t in self.gpu_instance_types), default=None)
            if limit is not None and self.gpu_nodes.max_pods > limit:
                raise ValueError(
                    f"gpuNodes.maxPods: {self.gpu_nodes.max_pods} exceeds the {limit} pods the VPC CNI can address on the "
                    "smallest GPU instance type without prefix delegation; set cluster.vpcCni.prefixDelegation: true "
                    f"or maxPods <= {limit}"
                )
        if self.demo.enabled and not (
            self.gpu_node_group.enabled or (self.karpenter.enabled and self.karpenter.node_pools)
        ):
            raise ValueError("demo.enabled: needs GPU capacity (gpuNodeGroup.enabled or a karpenter nodePool)")
        return self

    @model_validator(mode="after")
    def _fast_image_pull_fits_instances(self) -> Self:
        if self.gpu_nodes.fast_image_pull:
            small = [
                t for t in self.gpu_instance_types if not node_allocatable.instance_meets_fast_image_pull_minimum(t)
            ]
            if small:
                raise ValueError(
                    f"gpuNodes.fastImagePull: {', '.join(small)} are below nodeadm's minimum "
                    f"({node_allocatable.FAST_IMAGE_PULL_MIN_VCPUS} vCPUs and "
                    f"{node_allocatable.FAST_IMAGE_PULL_MIN_MEMORY_MIB // 1024} GiB), where the gate is ignored"
                )
        return self

    @model_validator(mode="after")
    def _warm_headroom_fits(self) -> Self:
        if not self.karpenter.enabled:
            return self
        for index, pool in enumerate(self.karpenter.node_pools):
            if pool.warm_gpu_slots > 0:
                _check_warm_headroom(self, pool, f"karpenter.nodePools.{index}")
        return self

    @model_validator(mode="after")
    def _timetable_fits(self) -> Self:
        pools = self.karpenter.node_pools if self.karpenter.enabled else []
        names = ", ".join(pool.name for pool in pools)
        for i, lab in enumerate(self.labs):
            for j, session in enumerate(lab.sessions):
                if self.session_pool(session) is not None:
                    continue
                key = f"labs.{i}.sessions.{j}"
                if not pools:
                    raise ValueError(f"{key}: a session needs a Karpenter pool to warm (karpenter.nodePools)")
                if session.node_pool is None:
                    raise ValueError(f"{key}.nodePool: required with several pools (one of {names})")
                raise ValueError(f"{key}.nodePool: '{session.node_pool}' is not a karpenter.nodePools name ({names})")
        for index, pool in enumerate(pools):
            if self.sessions_on(pool):
                _check_timetable(self, pool, f"karpenter.nodePools.{index}")
        return self

    @model_validator(mode="after")
    def _karpenter_fits_system_nodes(self) -> Self:
        # The chart's required anti-affinity puts each controller replica on its own (system) node.
        if self.karpenter.enabled and self.karpenter.replicas > self.system_nodes.min_size:
            raise ValueError(
                f"karpenter.replicas: {self.karpenter.replicas} exceeds systemNodes.minSize "
                f"{self.system_nodes.min_size}; each Karpenter controller replica needs its own system node"
            )
        return self

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

    def hub_pools(self, hub: HubSettings) -> tuple[NodePoolSettings, ...]:
        """The Karpenter pools a lab's hub offers as GPU profiles (its `pools`, else every pool), in config order."""
        if not self.karpenter.enabled:
            return ()
        wanted = hub.pools
        return tuple(p for p in self.karpenter.node_pools if wanted is None or p.name in wanted)

    @model_validator(mode="after")
    def _hubs_fit_the_cluster(self) -> Self:
        pool_names = [pool.name for pool in self.karpenter.node_pools] if self.karpenter.enabled else []
        for index, lab in enumerate(self.labs):
            hub = lab.hub
            if hub is None:
                continue
            key = f"labs.{index}.hub"
            unknown = [name for name in hub.pools or [] if name not in pool_names]
            if unknown:
                allowed = ", ".join(pool_names) or "none: karpenter is off or has no nodePools"
                raise ValueError(f"{key}.pools: {unknown} not a Karpenter pool this lab can use; allowed: {allowed}")
            if not self.hub_pools(hub):
                raise ValueError(
                    f"{key}: a hub offers GPU slots from Karpenter pools; enable karpenter with a nodePool"
                )
            _check_hub_quota(self, lab, f"labs.{index}")
            _check_hub_outlives_expiry(self, hub, key)
            if len(self.gpu_node_bootstrap.pre_pull_images) > PRE_PULL_MAX:
                raise ValueError(
                    f"{key}.image: GPU nodes would pre-pull more than {PRE_PULL_MAX} images "
                    "(gpuNodes.prePullImages plus every hub image); use fewer"
                )
            if hub.certificate_arn is not None:
                region = hub.certificate_arn.split(":")[3]
                if region != self.region:
                    raise ValueError(
                        f"{key}.certificateArn: the certificate is in {region}; the load balancer needs one in "
                        f"{self.region} (ACM certificates are regional)"
                    )
        return self

    @model_validator(mode="after")
    def _labs_fit_the_cluster(self) -> Self:
        names = [lab.name for lab in self.labs]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"labs: names must be unique (repeated: {', '.join(repeated)})")
        admins = self.cluster.admin_principal_arns
        deployer = self.cluster.deployer_principal_arn
        for index, lab in enumerate(self.labs):
            if deployer in lab.members:
                raise ValueError(
                    f"labs.{index}.members.{lab.members.index(deployer)}: {deployer} is "
                    "gpu-platform:cluster.deployerPrincipalArn, already cluster admin through the cluster-creator "
                    "entry; EKS allows one access entry per principal"
                )
            for member_index, member in enumerate(lab.members):
                if member in admins:
                    raise ValueError(
                        f"labs.{index}.members.{member_index}: {member} is also gpu-platform:cluster."
                        f"adminPrincipalArns[{admins.index(member)}]; an admin needs no lab access: remove it "
                        "from one of the two (EKS allows one access entry per principal)"
                    )
        if self.demo.enabled and self.labs:
            demo_lab = next((lab for lab in self.labs if lab.name == self.demo.namespace), None)
            if demo_lab is None:
                raise ValueError(
                    f"demo.namespace: '{self.demo.namespace}' must be one of the labs ({', '.join(names)})"
                )
            if demo_lab.gpu_slots < self.demo.replicas:
                raise ValueError(
                    f"demo.replicas: {self.demo.replicas} pods need {self.demo.replicas} GPU slots; "
                    f"lab '{demo_lab.name}' has gpuSlots {demo_lab.gpu_slots}"
                )
            _check_demo_fits_lab_quota(self.demo.replicas, demo_lab, self.labs.index(demo_lab))
        return self


def _check_hub_quota(settings: StackSettings, lab: LabSettings, key: str) -> None:
    """The lab's cpu and memory quota hold `gpuSlots` notebooks of its largest GPU profile (ValueError if not)."""
    assert lab.hub is not None
    shapes = [settings.warm_slot_shape_for(pool) for pool in settings.hub_pools(lab.hub)]
    cores = Decimal(lab.gpu_slots * max(shape.cpu_millicores for shape in shapes)) / 1000
    mib = lab.gpu_slots * max(shape.memory_mib for shape in shapes)
    if cores > quantity.parse(lab.cpu):
        raise ValueError(
            f"{key}.cpu: {lab.cpu} cannot hold the hub's {lab.gpu_slots} GPU notebooks ({cores:g} cores: gpuSlots x "
            f"the largest GPU profile); raise cpu to at least {cores:g}"
        )
    if mib * 1024**2 > quantity.parse(lab.memory):
        raise ValueError(
            f"{key}.memory: {lab.memory} cannot hold the hub's {lab.gpu_slots} GPU notebooks ({mib} MiB: gpuSlots x "
            f"the largest GPU profile); raise memory to at least {-(-mib // 1024)}Gi"
        )


def _check_demo_fits_lab_quota(replicas: int, lab: LabSettings, index: int) -> None:
    """The demo's pods request cpu and memory inside the lab's ResourceQuota (ValueError when they cannot fit).

    The demo Deployment skips await, so a quota too small would refuse its pods without failing `up`."""
    for resource in ("cpu", "memory"):
        request = DEMO_POD_REQUESTS[resource]
        quota = getattr(lab, resource)
        if quantity.times(request, replicas) > quantity.parse(quota):
            raise ValueError(
                f"demo.replicas: {replicas} demo pods request {replicas} x {request} {resource}, more than lab "
                f"'{lab.name}' allows (gpu-platform:labs[{index}].{resource}: {quota}); raise the lab's {resource} or lower "
                "demo.replicas"
            )


def _check_warm_headroom(settings: StackSettings, pool: NodePoolSettings, key: str) -> None:
    """Warm slots fit the pool's limits and one node holds all its slots of the slot shape (ValueError if not)."""
    slots, replicas = pool.warm_gpu_slots, settings.sharing_for(pool).replicas
    if slots > pool.gpu_limit * replicas:
        raise ValueError(
            f"{key}.warmGpuSlots: {slots} exceeds the pool's nvidia.com/gpu limit, gpuLimit x replicas = "
            f"{pool.gpu_limit} x {replicas} = {pool.gpu_limit * replicas}"
        )
    shape = settings.warm_slot_shape_for(pool)
    too_small = shape.cpu_millicores < WARM_SLOT_FLOOR.cpu_millicores or shape.memory_mib < WARM_SLOT_FLOOR.memory_mib
    if pool.warm_slot_shape is None and too_small:
        raise ValueError(
            f"{key}.warmSlotShape: the default shape ({shape.cpu_millicores}m, {shape.memory_mib} MiB) is below a "
            f"usable pod ({WARM_SLOT_FLOOR.cpu_millicores}m, {WARM_SLOT_FLOOR.memory_mib} MiB); set cpuMillicores "
            "and memoryMib, or fewer sharing replicas, or larger instance types"
        )
    within_limits = []
    for instance_type in pool.selected_instance_types:
        per_node = settings.slots_per_node(pool, instance_type)
        room = settings.pool_node_allocatable(pool, instance_type)
        if per_node * shape.cpu_millicores > room.cpu_millicores or per_node * shape.memory_mib > room.memory_mib:
            raise ValueError(
                f"{key}.warmSlotShape: {per_node} slots of {shape.cpu_millicores}m / {shape.memory_mib} MiB do not fit "
                f"one {instance_type} ({room.cpu_millicores}m / {room.memory_mib} MiB allocatable after system "
                "reservations); lower cpuMillicores or memoryMib"
            )
        nodes = -(-slots // per_node)
        if (
            nodes * gpu_catalog.vcpus(instance_type) <= pool.cpu_limit
            and nodes * per_node // replicas <= pool.gpu_limit
        ):
            within_limits.append(instance_type)
    if not within_limits:
        raise ValueError(
            f"{key}.warmGpuSlots: the nodes holding {slots} warm slots exceed cpuLimit {pool.cpu_limit} or gpuLimit "
            f"{pool.gpu_limit} on every instance type of the pool; raise the limits or lower warmGpuSlots"
        )


def _check_hub_outlives_expiry(settings: StackSettings, hub: HubSettings, key: str) -> None:
    """Expiry never ends a notebook: every pool the hub offers drains for at least maxHours (+ the pod's grace).

    A notebook may start on a node just before its expireAfter; expiry then drains the node and deletes even
    do-not-disrupt pods when terminationGracePeriod runs out (aws/karpenter-provider-aws v1.14.1
    website/content/en/v1.14/concepts/disruption.md), so that grace must cover the hub's maximum server age.
    """
    needed = hub.max_seconds + timetable.SESSION_POD_GRACE_SECONDS
    for pool in settings.hub_pools(hub):
        grace = timetable.parse_seconds(pool.termination_grace_period) or 0
        if grace < needed:
            index = settings.karpenter.node_pools.index(pool)
            raise ValueError(
                f"{key}.maxHours: {hub.max_hours}h notebooks on pool '{pool.name}' could be ended by expiry: its "
                f"karpenter.nodePools.{index}.terminationGracePeriod {pool.termination_grace_period} must cover "
                f"maxHours + {timetable.SESSION_POD_GRACE_SECONDS}s; set it to at least "
                f"{timetable.format_minutes(-(-needed // 60))}, lower maxHours, or leave the pool out of {key}.pools"
            )


def _check_timetable(settings: StackSettings, pool: NodePoolSettings, key: str) -> None:
    """A pool's sessions: one time zone, room in the budgets and limits, and expiry never ends a session."""
    sessions = settings.sessions_on(pool)
    first = sessions[0]
    for session in sessions[1:]:
        if session.timezone != first.timezone:
            raise ValueError(
                f"{session.key}.timezone: sessions on pool '{pool.name}' share one time zone (its CapacityBuffer "
                f"follows one weekly schedule); {first.key} uses {first.timezone}"
            )
    if len(pool.disruption_budgets) + len(sessions) > 50:
        raise ValueError(
            f"{key}.disruptionBudgets: {len(pool.disruption_budgets)} budgets plus one window per session "
            f"({len(sessions)}) exceed the NodePool's 50"
        )
    lead = settings.timetable_lead_minutes(pool)
    grace = timetable.parse_seconds(pool.termination_grace_period) or 0
    needed = settings.session_hold_seconds(pool) + timetable.SESSION_POD_GRACE_SECONDS
    if grace < needed:
        longest = max(sessions, key=lambda s: s.duration_minutes)
        raise ValueError(
            f"{key}.terminationGracePeriod: {pool.termination_grace_period} could end {longest.key} early: a session "
            f"pod may land on a node just before its expireAfter ({pool.expire_after}); expiry then drains the node "
            f"and deletes do-not-disrupt pods {timetable.SESSION_POD_GRACE_SECONDS}s before terminationGracePeriod "
            f"runs out, so it must cover lead time {lead}m + duration {longest.duration_minutes}m + "
            f"{timetable.SESSION_POD_GRACE_SECONDS}s: set at least {timetable.format_minutes(-(-needed // 60))}"
        )
    expire = timetable.parse_seconds(pool.expire_after)
    if expire is not None and expire <= lead * 60:
        raise ValueError(
            f"{key}.expireAfter: {pool.expire_after} is not longer than the lead time {lead}m: the node warmed for "
            "a session would expire before the session starts"
        )
    _check_timetable_peak(settings, pool, key, sessions, lead)


def _check_timetable_peak(
    settings: StackSettings, pool: NodePoolSettings, key: str, sessions: tuple[timetable.Session, ...], lead: int
) -> None:
    replicas = settings.sharing_for(pool).replicas
    held = timetable.held_profile(pool.warm_gpu_slots, sessions, lead)
    peak = max(held)
    at_peak = max(sessions, key=lambda s: timetable.peak_in_windows(held, s, lead))
    for instance_type in pool.selected_instance_types:
        per_node = settings.slots_per_node(pool, instance_type)
        nodes = -(-peak // per_node)
        if (
            nodes * gpu_catalog.vcpus(instance_type) <= pool.cpu_limit
            and nodes * per_node // replicas <= pool.gpu_limit
        ):
            return
    raise ValueError(
        f"{at_peak.key}.learners: at its peak the pool holds {peak} slots (warmGpuSlots plus the learners of "
        f"overlapping sessions), whose nodes exceed {key} cpuLimit {pool.cpu_limit} or gpuLimit {pool.gpu_limit} on "
        "every instance type of the pool; raise the limits or lower learners"
    )


# --- reading Pulumi configuration ----------------------------------------------------------------

REGION_KEY = "aws:region"
_NAMESPACE = f"{PROJECT}:"


def config_key(field_name: str) -> str:
    """`cluster_name` -> `gpu-platform:clusterName` (the stack YAML key)."""
    return _NAMESPACE + to_camel(field_name)


def allowed_config_keys() -> tuple[str, ...]:
    return tuple(config_key(name) for name in StackSettings.model_fields if name != "region")


def _is_structured(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, dict):
        return True
    if origin is Annotated:
        return _is_structured(get_args(annotation)[0])
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def load_settings(raw_config: Mapping[str, str], secret_keys: Iterable[str] = ()) -> StackSettings:
    """Validate Pulumi's flat string config map (`namespace:key` -> string) into `StackSettings`.

    Structured values arrive as JSON text, as `pulumi.Config.require_object` reads them.
    `secret_keys` are the keys (or deeper key paths) given as `secure:` values.
    Raises `SettingsError` naming every bad key; never registers or touches anything.
    """
    allowed = allowed_config_keys()
    problems = config_rules.namespace_problems(raw_config, (REGION_KEY, *allowed))
    for key in sorted(raw_config):
        if key.startswith(_NAMESPACE) and key not in allowed:
            hint = config_rules.unknown_key_hint(key, (*allowed, REGION_KEY))
            problems.append((key, f"unknown key{hint}; allowed: {', '.join(allowed)}"))
    secrets = set(secret_keys)
    for path in sorted(secrets):
        if (path.startswith(_NAMESPACE) or path == REGION_KEY) and not config_rules.may_be_secret(path):
            problems.append((path, config_rules.secret_message(path)))
    values = _raw_values(raw_config, problems)
    for location, message in config_rules.ignored_settings(values):
        problems.append((_key_path(list(location)), message))
    try:
        settings = StackSettings.model_validate(values)
    except ValidationError as exc:
        # A key already reported (empty, secret, ignored) is not reported again by the model.
        reported = [path for path, _ in problems]
        problems += [p for p in _problems_from(exc) if not any(_covers(r, p[0]) for r in reported)]
    else:
        problems += _clear_text_hub_secrets(settings, secrets)
    if problems:
        raise SettingsError(problems)
    return settings


def _clear_text_hub_secrets(settings: StackSettings, secret_keys: set[str]) -> list[tuple[str, str]]:
    """Hub passwords and client secrets given in clear text (Pulumi marks a whole key secret at runtime)."""
    labs_key = config_key("labs")
    if labs_key in secret_keys:
        return []
    problems = []
    for index, lab in enumerate(settings.labs):
        auth = lab.hub.auth.model_dump(by_alias=True) if lab.hub else {}
        for field in HUB_SECRET_FIELDS:
            path = f"{labs_key}[{index}].hub.auth.{field}"
            # A `secure:` value read offline without its key is the redacted placeholder: it was a secret.
            if auth.get(field) not in (None, REDACTED_SECRET) and path not in secret_keys:
                problems.append(
                    (path, f"must be a secret: pulumi config set --secret --path '{path}' <value> (writes secure:)")
                )
    return problems


def _covers(reported: str, path: str) -> bool:
    return path == reported or path.startswith((reported + ".", reported + "["))


def _raw_values(raw_config: Mapping[str, str], problems: list[tuple[str, str]]) -> dict[str, Any]:
    """Model input by alias: scalars as text, structured keys parsed; empty values become problems."""
    values: dict[str, Any] = {}
    for name, field in StackSettings.model_fields.items():
        key = REGION_KEY if name == "region" else config_key(name)
        if key not in raw_config:
            continue
        text = raw_config[key]
        # `key:` with nothing after it: the CLI hands over an empty or JSON-null value, never a name.
        if text.strip() in ("", "null"):
            problems.append((key, config_rules.EMPTY_VALUE))
        elif not _is_structured(field.annotation):
            values[to_camel(name)] = text
        else:
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                problems.append((key, "must be a structured value (a YAML mapping or list), see docs/configuration.md"))
                continue
            values[to_camel(name)] = value
            for location in config_rules.null_locations(value, (to_camel(name),)):
                problems.append((_key_path(list(location)), config_rules.EMPTY_VALUE))
    return values


def _problems_from(exc: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for error in exc.errors(include_url=False):
        # `schema_location` keeps a tagged union's member (the schema needs it); the key path drops it.
        schema_location = list(error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        # A model-level check names its own key as "<field>: ..."; fold it into the path.
        head, sep, rest = message.partition(": ")
        if sep and re.fullmatch(r"[a-zA-Z][\w.\[\]]*", head):
            # `labs.0.members` and `adminPrincipalArns[0]` both name a list element.
            schema_location += [
                int(index or key) if (index or key).isdigit() else key
                for key, index in re.findall(r"(\w+)|\[(\d+)\]", head)
            ]
            message = rest
        location = _without_union_tags(schema_location)
        problems.append((_key_path(location), _with_allowed(error, message, schema_location)))
    return problems


def _without_union_tags(location: list[Any]) -> list[Any]:
    """pydantic names the chosen member of a tagged union (`auth.sharedPassword.password`): not a config key."""
    return [part for i, part in enumerate(location) if not (i and location[i - 1] == "auth" and part in HUB_AUTH_TYPES)]


_TYPE_WORDS = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list, e.g. [a, b]",
    "dict_type": "must be a mapping of keys to values",
    "model_type": "must be a mapping of keys to values",
    "model_attributes_type": "must be a mapping of keys to values",
}
_RANGE_ERRORS = (
    "greater_than_equal", "less_than_equal", "greater_than", "less_than", "too_short", "too_long",
    "string_too_short", "string_too_long",
)  # fmt: skip


def _with_allowed(error: Any, message: str, location: list[Any]) -> str:
    ctx = error.get("ctx") or {}
    kind, got = error["type"], error.get("input")
    if kind == "literal_error" and "expected" in ctx:
        choices = re.findall(r"'([^']*)'", ctx["expected"])
        by_case = {choice.lower(): choice for choice in choices}
        hint = by_case.get(str(got).lower()) or config_rules.closest(str(got), choices)
        return f"must be {ctx['expected']} (got {got!r}" + (f"; did you mean '{hint}'?)" if hint else ")")
    if kind == "extra_forbidden":
        known = config_rules.known_keys_at(config_rules.schema_at(StackSettings, location[:-1]))
        hint = config_rules.did_you_mean(str(location[-1]), known)
        return f"unknown key{hint}; allowed here: {', '.join(known)}"
    if kind == "missing":
        return "required"
    if kind in _RANGE_ERRORS:
        return config_rules.range_words(config_rules.schema_at(StackSettings, location), got) or message
    if kind == "string_type" and isinstance(got, int | float):
        return f'must be text, and YAML read {got!r} as a number or boolean: quote the value, e.g. "{got}"'
    if kind == "string_type":
        return f"must be text, not a {'list' if isinstance(got, list) else 'mapping'} (got {got!r})"
    if kind in _TYPE_WORDS:
        return f"{_TYPE_WORDS[kind]} (got {got!r})"
    return message


def _key_path(location: list[Any]) -> str:
    if not location:
        return f"{_NAMESPACE}<stack>"
    head, rest = location[0], location[1:]
    path = REGION_KEY if head == "region" else f"{_NAMESPACE}{head}"
    for part in rest:
        if part == "[key]":  # pydantic's marker for "the key of this map entry"
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][\w-]*", str(part)):
            path += f".{part}"
        else:
            path += f"[{json.dumps(part)}]"
    return path
