"""Field types of the settings models: validators whose docstrings say what is allowed, and the base models.

Each check raises `ValueError` in words a user can act on (never the regex); the configuration reference
(`python -m offline.config_reference`) quotes each validator's docstring as what a key allows.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic.alias_generators import to_camel

from components.facts import cron, gpu_catalog
from components.facts.constants import KARPENTER_CONTROLLER_ROLE_SUFFIX

SUPPORTED_KUBERNETES_VERSIONS = ("1.34", "1.35", "1.36")
SUPPORTED_REGIONS = (
    "us-east-1", "us-east-2", "us-west-1", "us-west-2", "ca-central-1",
    "eu-west-1", "eu-west-2", "eu-central-1", "eu-north-1",
    "ap-northeast-1", "ap-northeast-2", "ap-south-1", "ap-southeast-1", "ap-southeast-2",
)  # fmt: skip

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
_DIGEST = re.compile(r"@sha256:[a-f0-9]{64}$")
_PRINCIPAL_ARN = re.compile(r"^arn:aws(-[a-z]+)*:iam::[0-9]{12}:(role|user)/[\w+=,.@/-]{1,512}$")


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


def _registry_host(value: str) -> str:
    """The image's first path component must be a registry host: GPU nodes pre-pull with `ctr images pull`,
    which, unlike Docker, never adds `docker.io/` (containerd/containerd#6127: "the image reference has to
    be full path"). A host is what distribution/reference `splitDockerDomain` (normalize.go) takes as one:
    a name with a '.' or a ':port', or `localhost`; `tensorflow/tensorflow:2.12.0-gpu` has none."""
    first, slash, _ = value.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        raise ValueError(
            f"must be a fully qualified image starting with its registry host, e.g. docker.io/{value} "
            f"(got {value!r}); GPU nodes pre-pull it with `ctr images pull`, which adds no default registry"
        )
    return value


def _pinned_image(value: str) -> str:
    """A fully qualified image (registry host first, e.g. docker.io/org/image) with a tag and/or a digest
    (`:latest` only with a digest)."""
    _registry_host(value)
    if not _IMAGE_REF.match(value):
        raise ValueError(
            f"must be a fully qualified image with a tag or digest, e.g. docker.io/org/image:1.2.3 (got {value!r})"
        )
    if value.endswith(":latest"):
        raise ValueError("must be pinned: ':latest' is not allowed")
    return value


def _digest_image(value: str) -> str:
    """A fully qualified image (registry host first) pinned by digest: `registry/repo[:tag]@sha256:<64 hex>`."""
    _pinned_image(value)
    if not _DIGEST.search(value):
        raise ValueError(
            "must be an image pinned by digest, e.g. quay.io/jupyter/pytorch-notebook:cuda12-2025-06-02@sha256:<64 hex> "
            f"(got {value!r})"
        )
    return value


def _gpu_instance_type(value: str) -> str:
    """A known NVIDIA GPU instance type (components/facts/gpu_catalog.py; see "GPU instance types")."""
    if value not in gpu_catalog.GPU_INSTANCE_TYPES:
        raise ValueError(
            f"'{value}' is not a known NVIDIA GPU instance type; allowed: {', '.join(gpu_catalog.GPU_INSTANCE_TYPES)}"
        )
    return value


def _gpu_family(value: str) -> str:
    """A known NVIDIA GPU family (components/facts/gpu_catalog.py; see "GPU instance types")."""
    if value not in gpu_catalog.GPU_FAMILIES:
        raise ValueError(f"'{value}' is not a known NVIDIA GPU family; allowed: {', '.join(gpu_catalog.GPU_FAMILIES)}")
    return value


def _cpu_instance_type(value: str) -> str:
    """A CPU-only type of the catalog, so the fit model can size its nodes: families m5, m6i, m6a, m7i, m7a, c6i,
    c7i, r6i, r7i; sizes large, xlarge, 2xlarge, 4xlarge, 8xlarge."""
    if value not in gpu_catalog.CPU_INSTANCE_TYPES:
        families = ", ".join(gpu_catalog.CPU_FAMILIES)
        raise ValueError(
            f"'{value}' is not a CPU instance type the fit model knows; allowed: families {families}, "
            "sizes large, xlarge, 2xlarge, 4xlarge, 8xlarge (e.g. m6i.large)"
        )
    return value


def matching(pattern: str, words: str) -> AfterValidator:
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
# Every image the config takes is one of these two (a new image key too): GPU nodes may pre-pull it.
PinnedImage = Annotated[str, AfterValidator(_pinned_image)]
DigestImage = Annotated[str, AfterValidator(_digest_image)]
GpuInstanceType = Annotated[str, AfterValidator(_gpu_instance_type)]
GpuFamily = Annotated[str, AfterValidator(_gpu_family)]
PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]
Cidr = Annotated[str, AfterValidator(_cidr)]
VpcId = Annotated[str, matching(r"vpc-[0-9a-f]{8,17}", "must be a VPC id like vpc-0abc1234def567890")]
SubnetId = Annotated[str, matching(r"subnet-[0-9a-f]{8,17}", "must be a subnet id like subnet-0abc1234def567890")]
InstanceType = Annotated[str, matching(r"[a-z][a-z0-9-]*\.[a-z0-9]+", "must be an EC2 instance type like m6i.large")]
CpuInstanceType = Annotated[InstanceType, AfterValidator(_cpu_instance_type)]
# Karpenter NodePool CRD patterns (karpenter.sh_nodepools.yaml v1.14.1), said in words.
BudgetNodes = Annotated[
    str, matching(r"((100|[0-9]{1,2})%|[0-9]+)", 'must be a node count like "1" or a percentage like "10%"')
]
BudgetDuration = Annotated[
    str,
    matching(
        r"(([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?", "must be hours and/or minutes like 30m, 10h or 1h30m (no seconds)"
    ),
]
GracePeriod = Annotated[str, matching(r"([0-9]+(s|m|h))+", "must be a duration like 30m, 1h or 1h30m")]
TagKey = Annotated[str, AfterValidator(_tag_key)]
TagValue = Annotated[str, BeforeValidator(_tag_value), Field(max_length=256)]
Region = Annotated[str, AfterValidator(_region)]
ClusterName = Annotated[str, AfterValidator(_cluster_name)]
KubernetesVersion = Annotated[str, AfterValidator(_kubernetes_version)]
CronSchedule = Annotated[str, AfterValidator(_schedule)]


# --- base models -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IgnoredUnless:
    """Field metadata (`Annotated[int, IgnoredUnless("gpu_metrics")]`): the key takes effect only while `switch`, a
    true-or-false key of the same section, is true. The front door (`loading.load_settings`) reports the key set
    while its switch is false, reading the switch's default from its field, instead of dropping it silently."""

    switch: str


class SettingsModel(BaseModel):
    """camelCase keys as in the stack YAML, unknown keys rejected, values immutable.

    Each field's attribute docstring (the string right under it) is its description in the generated
    configuration reference (`python -m offline.config_reference`, docs/configuration.md), which reads it from
    the source; pydantic's `use_attribute_docstrings` would parse every model's source on every run.

    `populate_by_name` is for the program's own models (defaults, `model_copy`); a stack file is validated by
    alias only (`loading.load_settings`), so `min_size` there is an unknown key, at every level, new keys too.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class ScalingSettings(SettingsModel):
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
