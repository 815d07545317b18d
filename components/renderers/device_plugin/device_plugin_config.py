"""The NVIDIA device plugin's config file: a typed model of it, built from the stack's sharing settings.

The model mirrors the Go types the plugin (k8s-device-plugin v0.20.0, package `api/config/v1`)
unmarshals its `--config-file` into: `Config{version, flags, sharing, imex}`, `Flags` with the
plugin's `PluginCommandLineFlags` under `flags.plugin`, and `Sharing{timeSlicing, mps}` of
`ReplicatedResources{renameByDefault, failRequestsGreaterThanOne, resources[{name, rename,
devices, replicas}]}` - same keys, same types, same rules.

Two deliberate differences from the plugin:
- Unknown keys are rejected. The plugin decodes non-strictly, so a misplaced key (say
  `renameByDefault` under `flags`, NVIDIA/k8s-device-plugin#1433) is silently ignored and the
  node advertises its physical GPU count only. Not modelled at all, hence rejected too: the
  top-level `resources` block (the plugin ignores it: "not yet supported") and the GFD-only
  `flags.gfd` / `flags.useNodeFeatureAPI` (the plugin drops them).
- Rules the plugin only enforces when it starts (and then crash-loops on) are checked here:
  `replicas` >= 2, resource names <= 63 characters with a DNS-subdomain name part, `devices`
  forms, MPS needs `mpsRoot`, no MPS with `migStrategy: mixed`, at most 48 MPS clients per GPU,
  the `imex` channel ids. The plugin lets both `timeSlicing` and `mps` through (MPS silently
  wins); its README calls them mutually exclusive, so this model rejects the pair. A sharing
  resource that names no resource the plugin advertises is skipped without a word by the plugin;
  here it is an error.

`GpuSharingSettings` already rejects every value that would break one of these rules (see
tests/device_plugin/test_device_plugin_config.py, which checks that for every settings value), so stack
configuration fails at settings time with a key path, never as a crash-looping DaemonSet.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal, Self

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt, model_validator
from pydantic.alias_generators import to_camel

from components.facts.constants import GPU_RESOURCE
from components.settings import MPS_MAX_REPLICAS, GpuSharingSettings

CONFIG_VERSION: Final = "v1"
# Host directory the MPS control daemon shares with the plugin and with MPS clients (the chart's `mps.root`,
# there `/run/nvidia/mps`). Non-root clients need every directory above the pipe directory traversable: the
# control daemon runs each client UID's MPS server as that UID (`setuid` + exec nvidia-cuda-mps-server), and a
# vendor's `/run/nvidia` of mode 0700 stopped non-root MPS on Bottlerocket (bottlerocket-os/bottlerocket#4673,
# fixed by bottlerocket-kernel-kit PR #415). So the root lies outside `/run/nvidia`, in a directory only this
# platform creates: the kubelet creates a missing hostPath `DirectoryOrCreate` and its parents 0755
# (docs/sharing-kinds.md "Non-root MPS").
MPS_ROOT = "/run/gpu-platform/mps"

RESOURCE_NAME_PREFIX = "nvidia.com"
MAX_RESOURCE_NAME_LENGTH = 63  # api/config/v1/consts.go MaxResourceNameLength
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# A device reference in `devices`: GPU index, MIG index `gpu:mig`, GPU UUID or MIG UUID (replicas.go).
_DEVICE_REF = re.compile(rf"^([0-9]+|[0-9]+:[0-9]+|GPU-{_UUID}|MIG-{_UUID}|MIG-GPU-{_UUID}/[0-9]+/[0-9]+)$")
# The only names the plugin advertises, hence the only ones sharing can apply to (internal/rm/device_map.go).
_SHAREABLE_RESOURCE = re.compile(rf"^{re.escape(GPU_RESOURCE)}$|^{re.escape(RESOURCE_NAME_PREFIX)}/mig-[0-9a-z.-]+$")

MigStrategy = Literal["none", "single", "mixed"]
DeviceListStrategy = Literal["envvar", "volume-mounts", "cdi-annotations", "cdi-cri"]


def full_resource_name(name: str) -> str:
    """`gpu` -> `nvidia.com/gpu`: the plugin adds its prefix to names without it (NewResourceName)."""
    return name if name.startswith(f"{RESOURCE_NAME_PREFIX}/") else f"{RESOURCE_NAME_PREFIX}/{name}"


def _resource_name(value: str) -> str:
    full = full_resource_name(value)
    if len(full) > MAX_RESOURCE_NAME_LENGTH:
        raise ValueError(f"fully-qualified resource name must be {MAX_RESOURCE_NAME_LENGTH} characters or less: {full}")
    name_part = full.split("/", 1)[1]
    if not _DNS_SUBDOMAIN.match(name_part):
        raise ValueError(f"incorrect format for resource name '{full}': the part after '/' must be a DNS subdomain")
    return value


def _device_ref(value: int | str) -> int | str:
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"GPU index must be >= 0, got {value}")
    elif not _DEVICE_REF.match(value):
        raise ValueError(f"'{value}' is not a GPU index, MIG index (gpu:mig), GPU UUID or MIG UUID")
    return value


ResourceName = Annotated[str, AfterValidator(_resource_name)]
DeviceRef = Annotated[StrictInt | str, AfterValidator(_device_ref)]


class _GoStruct(BaseModel):
    """JSON tags of the Go struct (camelCase), unknown keys rejected, values immutable, types strict."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, strict=True)


class PluginFlags(_GoStruct):
    """`flags.plugin` (PluginCommandLineFlags)."""

    pass_device_specs: bool | None = None
    device_list_strategy: DeviceListStrategy | Annotated[list[DeviceListStrategy], Field(min_length=1)] | None = None
    device_id_strategy: Literal["uuid", "index"] | None = Field(default=None, alias="deviceIDStrategy")
    cdi_annotation_prefix: str | None = None
    nvidia_ctk_path: str | None = Field(default=None, alias="nvidiaCTKPath")
    container_driver_root: str | None = None
    shared_devices_allocation_policy: Literal["distributed", "packed"] | None = None

    @property
    def device_list_strategies(self) -> tuple[str, ...]:
        """Effective list strategies (the plugin's default is `envvar`)."""
        strategy = self.device_list_strategy
        if strategy is None:
            return ("envvar",)
        return (strategy,) if isinstance(strategy, str) else tuple(strategy)


class Flags(_GoStruct):
    """`flags` (CommandLineFlags) as the device plugin reads them."""

    mig_strategy: MigStrategy | None = None
    fail_on_init_error: bool | None = None
    mps_root: str | None = None
    nvidia_driver_root: str | None = None
    nvidia_dev_root: str | None = None
    gdrcopy_enabled: bool | None = None
    gds_enabled: bool | None = None
    mofed_enabled: bool | None = None
    device_discovery_strategy: Literal["auto", "nvml", "tegra"] | None = None
    plugin: PluginFlags | None = None


class ReplicatedResource(_GoStruct):
    """One entry of `resources` under `timeSlicing` / `mps` (ReplicatedResource)."""

    name: ResourceName
    rename: ResourceName | None = None
    # Unset means "all"; the plugin accepts the string `all`, a count > 0 or a list of device references.
    devices: Literal["all"] | Annotated[StrictInt, Field(gt=0)] | list[DeviceRef] | None = None
    replicas: Annotated[StrictInt, Field(ge=2)]

    @model_validator(mode="after")
    def _advertised_resource(self) -> Self:
        full = full_resource_name(self.name)
        if not _SHAREABLE_RESOURCE.match(full):
            raise ValueError(
                f"name: '{full}' is not a resource the plugin advertises ({GPU_RESOURCE} or "
                f"{RESOURCE_NAME_PREFIX}/mig-<profile>); the plugin would skip it silently"
            )
        return self


class ReplicatedResources(_GoStruct):
    """`sharing.timeSlicing` / `sharing.mps` (ReplicatedResources)."""

    rename_by_default: bool | None = None
    fail_requests_greater_than_one: bool | None = None
    resources: Annotated[list[ReplicatedResource], Field(min_length=1)]


class Sharing(_GoStruct):
    time_slicing: ReplicatedResources | None = None
    mps: ReplicatedResources | None = None

    @model_validator(mode="after")
    def _one_strategy(self) -> Self:
        if self.time_slicing is not None and self.mps is not None:
            raise ValueError("set only one of timeSlicing or mps (mutually exclusive; the plugin would use mps)")
        return self


class Imex(_GoStruct):
    channel_ids: list[StrictInt] | None = Field(default=None, alias="channelIDs")
    required: bool | None = None

    @model_validator(mode="after")
    def _channel_ids(self) -> Self:
        if self.channel_ids not in (None, [], [0]):
            raise ValueError(f"channelIDs: must be [] or [0], got {self.channel_ids}")
        return self


class PluginConfig(_GoStruct):
    """The whole config file (Config)."""

    version: Literal["v1"] = CONFIG_VERSION
    flags: Flags = Flags()
    sharing: Sharing | None = None
    imex: Imex | None = None

    @property
    def strategy(self) -> Literal["time-slicing", "mps", "none"]:
        """The sharing strategy the plugin applies (Sharing.SharingStrategy)."""
        if self.sharing is not None and self.sharing.mps is not None:
            return "mps"
        if self.sharing is not None and self.sharing.time_slicing is not None:
            return "time-slicing"
        return "none"

    @model_validator(mode="after")
    def _mps_requirements(self) -> Self:
        if self.sharing is None or self.sharing.mps is None:
            return self
        if not self.flags.mps_root:
            raise ValueError("flags.mpsRoot: required when sharing.mps is set (the plugin refuses MPS without it)")
        if self.flags.mig_strategy == "mixed":
            raise ValueError("flags.migStrategy: 'mixed' cannot be used with MPS sharing")
        for resource in self.sharing.mps.resources:
            if resource.replicas > MPS_MAX_REPLICAS:
                raise ValueError(
                    f"sharing.mps.resources: {resource.name} has {resource.replicas} replicas; "
                    f"MPS serves at most {MPS_MAX_REPLICAS} clients per GPU"
                )
        return self


def plugin_config_for(sharing: GpuSharingSettings) -> PluginConfig:
    """The plugin config of one sharing profile.

    `renameByDefault` stays false: Karpenter only knows `nvidia.com/gpu`, a renamed
    `nvidia.com/gpu.shared` would leave pods unschedulable. `migStrategy: none` and the
    `envvar` list strategy are pinned in the file, so the plugin needs no capability.
    """
    replicated = None
    if sharing.strategy != "none":
        replicated = ReplicatedResources(
            rename_by_default=False,
            fail_requests_greater_than_one=sharing.fail_requests_greater_than_one,
            resources=[ReplicatedResource(name=GPU_RESOURCE, replicas=sharing.replicas)],
        )
    mps = sharing.strategy == "mps"
    shared = None
    if replicated is not None:
        shared = Sharing(mps=replicated) if mps else Sharing(time_slicing=replicated)
    return PluginConfig(
        flags=Flags(
            mig_strategy="none",
            # Fail loudly on a node without a usable GPU; node affinity keeps the plugin on GPU nodes.
            fail_on_init_error=True,
            mps_root=MPS_ROOT if mps else None,
            plugin=PluginFlags(pass_device_specs=False, device_list_strategy="envvar", device_id_strategy="uuid"),
        ),
        sharing=shared,
    )


def render_config(config: PluginConfig) -> str:
    """The YAML file the plugin reads (keys in Go-struct order, unset fields left out)."""
    data = config.model_dump(mode="json", by_alias=True, exclude_none=True)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of duplicated keys without a word; a config file must not have any."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        keys = [self.construct_object(key_node, deep=deep) for key_node, _ in node.value]
        duplicates = sorted({str(k) for k in keys if keys.count(k) > 1})
        if duplicates:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicated key(s) {', '.join(duplicates)}", node.start_mark
            )
        return super().construct_mapping(node, deep=deep)


def parse_config(text: str) -> PluginConfig:
    """Read a config file strictly: YAML errors, duplicated keys, unknown keys and rule violations all raise."""
    data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    if not isinstance(data, dict):
        raise ValueError(f"the device-plugin config must be a mapping, got {type(data).__name__}")
    return PluginConfig.model_validate(data, by_alias=True, by_name=False)
