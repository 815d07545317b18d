"""Typed settings for the whole stack: the one place stack configuration is read and checked.

Pulumi hands a program its configuration as a flat map of strings (`"gpu-platform:network"` ->
JSON text, `"aws:region"` -> `"us-west-1"`). `load_settings` turns that map into a frozen
`StackSettings` or raises `SettingsError`, which lists every offending key path with what is
allowed. Nothing here imports Pulumi: the synth, the program and the tests share it.

One concern per module (tests/house/test_settings_package.py holds that these modules import only each other and the
fact modules, never a component or a renderer), from the bottom up:

- `fields.py`: field types (each check's docstring says what is allowed) and the base models
- `cluster.py`, `gpu.py`, `karpenter.py`, `observability.py`, `hub.py`, `labs.py`: the sections' models
- `sharing_kinds.py`: a pool's sharing kind and what one slot gets (memory, isolation)
- `resolved.py`: the resolved model, every GPU pool worked out once from the sections (sharing, slots,
  GPUs, vCPUs and allocatable per instance type, warm slot shape, sessions, lead and hold times, limits) with the
  rows and figures the summary, the alarms and preflight read (capacity, warm headroom, quotas, timetable)
- `stack.py`: `StackSettings`, every section together, its resolved pools (`StackSettings.resolved`)
- `checks/`: the checks across sections (pools, warm slots, timetables, hubs, labs, the fit model)
- `loading.py`: the config front door, Pulumi's flat config map checked (namespaces, unknown keys, empty values,
  secrets, settings a switched-off feature ignores; switches and defaults read from the models' fields) into
  `StackSettings`, then the checks across sections; `errors.py`: `SettingsError` and its wording, from the models'
  JSON schema

Callers import from `components.settings`: every name a caller uses is re-exported here (tests/house/test_settings_package.py).
"""

from components.settings.cluster import (
    ClusterSettings,
    ControlPlaneLogType,
    ExistingNetwork,
    NetworkSettings,
    SystemNodeGroupSettings,
    VpcCniSettings,
)
from components.settings.errors import REGION_KEY, SettingsError
from components.settings.fields import (
    CLUSTER_NAME_MAX,
    IAM_NAME_MAX,
    LONGEST_DERIVED_SUFFIX,
    SUPPORTED_KUBERNETES_VERSIONS,
    SUPPORTED_REGIONS,
    BudgetDuration,
    BudgetNodes,
    Cidr,
    DnsLabel,
    Duration,
    GpuFamily,
    GpuInstanceType,
    GracePeriod,
    InstanceType,
    PinnedImage,
    PrincipalArn,
    SubnetId,
    VpcId,
)
from components.settings.gpu import (
    FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS,
    GP3_IOPS_RANGE,
    GP3_MAX_IOPS_PER_GIB,
    GP3_MAX_MIBPS_PER_IOPS,
    GP3_THROUGHPUT_RANGE,
    MAX_PODS_RANGE,
    MPS_MAX_REPLICAS,
    POD_PIDS_LIMIT_RANGE,
    PRE_PULL_MAX,
    TIME_SLICING_MAX_REPLICAS,
    GpuNodeGroupSettings,
    GpuNodeSettings,
    GpuSharingSettings,
    RootVolumeSettings,
)
from components.settings.hub import (
    ADMIN_PASSWORD_MIN_LENGTH,
    HUB_AUTH_TYPES,
    HUB_SECRET_FIELDS,
    REDACTED_SECRET,
    SHARED_PASSWORD_MIN_LENGTH,
    GithubAuth,
    Hostname,
    HttpsUrl,
    HubAuth,
    HubGpuIdleSettings,
    HubSettings,
    HubUsername,
    OidcAuth,
    SharedPasswordAuth,
)
from components.settings.karpenter import (
    TYPICAL_WARM_SLOT,
    WARM_SLOT_FLOOR,
    CapacityReservationTerm,
    CpuUserPoolSettings,
    DisruptionBudget,
    KarpenterSettings,
    NodePoolSettings,
    WarmSlotShape,
)
from components.settings.labs import RESERVED_NAMESPACES, DemoSettings, LabSession, LabSettings
from components.settings.loading import allowed_config_keys, config_key, load_settings
from components.settings.observability import ObservabilitySettings
from components.settings.resolved import (
    MANAGED_GROUP_POOL,
    CapacityRow,
    KarpenterPool,
    NodeCapacity,
    QuotaNeed,
    ResolvedPool,
    ResolvedStack,
    WarmHeadroomRow,
)
from components.settings.sharing_kinds import Isolation, SharingKind, SlotModel
from components.settings.stack import StackSettings

__all__ = [
    "ADMIN_PASSWORD_MIN_LENGTH",
    "CLUSTER_NAME_MAX",
    "FAST_IMAGE_PULL_MIN_THROUGHPUT_MIBPS",
    "GP3_IOPS_RANGE",
    "GP3_MAX_IOPS_PER_GIB",
    "GP3_MAX_MIBPS_PER_IOPS",
    "GP3_THROUGHPUT_RANGE",
    "HUB_AUTH_TYPES",
    "HUB_SECRET_FIELDS",
    "IAM_NAME_MAX",
    "LONGEST_DERIVED_SUFFIX",
    "MANAGED_GROUP_POOL",
    "MAX_PODS_RANGE",
    "MPS_MAX_REPLICAS",
    "POD_PIDS_LIMIT_RANGE",
    "PRE_PULL_MAX",
    "REDACTED_SECRET",
    "REGION_KEY",
    "RESERVED_NAMESPACES",
    "SHARED_PASSWORD_MIN_LENGTH",
    "SUPPORTED_KUBERNETES_VERSIONS",
    "SUPPORTED_REGIONS",
    "TIME_SLICING_MAX_REPLICAS",
    "TYPICAL_WARM_SLOT",
    "WARM_SLOT_FLOOR",
    "BudgetDuration",
    "BudgetNodes",
    "CapacityReservationTerm",
    "CapacityRow",
    "Cidr",
    "ClusterSettings",
    "ControlPlaneLogType",
    "CpuUserPoolSettings",
    "DemoSettings",
    "DisruptionBudget",
    "DnsLabel",
    "Duration",
    "ExistingNetwork",
    "GithubAuth",
    "GpuFamily",
    "GpuInstanceType",
    "GpuNodeGroupSettings",
    "GpuNodeSettings",
    "GpuSharingSettings",
    "GracePeriod",
    "Hostname",
    "HttpsUrl",
    "HubAuth",
    "HubGpuIdleSettings",
    "HubSettings",
    "HubUsername",
    "InstanceType",
    "Isolation",
    "KarpenterPool",
    "KarpenterSettings",
    "LabSession",
    "LabSettings",
    "NetworkSettings",
    "NodeCapacity",
    "NodePoolSettings",
    "ObservabilitySettings",
    "OidcAuth",
    "PinnedImage",
    "PrincipalArn",
    "QuotaNeed",
    "ResolvedPool",
    "ResolvedStack",
    "RootVolumeSettings",
    "SettingsError",
    "SharedPasswordAuth",
    "SharingKind",
    "SlotModel",
    "StackSettings",
    "SubnetId",
    "SystemNodeGroupSettings",
    "VpcCniSettings",
    "VpcId",
    "WarmHeadroomRow",
    "WarmSlotShape",
    "allowed_config_keys",
    "config_key",
    "load_settings",
]
