"""The device-plugin config: typed model, YAML round trip, the plugin's own rules, yamllint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError
from yamllint import linter
from yamllint.config import YamlLintConfig

from components.facts.constants import GPU_RESOURCE
from components.renderers.device_plugin.device_plugin_config import (
    MAX_RESOURCE_NAME_LENGTH,
    MPS_ROOT,
    PluginConfig,
    full_resource_name,
    parse_config,
    plugin_config_for,
    render_config,
)
from components.settings import MPS_MAX_REPLICAS, GpuSharingSettings
from tests.support.settings import settings_for

YAMLLINT_CONFIG = YamlLintConfig(file=str(Path(__file__).with_name("yamllint-device-plugin.yaml")))
GPU_UUID = "GPU-b1028956-cfa2-0990-bf4a-5da9abb51763"


def all_sharing_variants() -> list[GpuSharingSettings]:
    """Every profile the stacks use, plus MPS, exclusive and lenient variants."""
    used = [s for stack in ("staging", "prod") for s in settings_for(stack).sharing_profiles]
    extra = [
        GpuSharingSettings(strategy="mps", replicas=4),
        GpuSharingSettings(strategy="mps", replicas=MPS_MAX_REPLICAS, fail_requests_greater_than_one=False),
        GpuSharingSettings(strategy="none", replicas=1),
        GpuSharingSettings(strategy="time-slicing", replicas=2, fail_requests_greater_than_one=False),
    ]
    return used + extra


VARIANTS = all_sharing_variants()


def ts_config(**resource: Any) -> dict[str, Any]:
    """A raw time-slicing config (as the plugin would read it) with one resource entry."""
    return {
        "version": "v1",
        "sharing": {"timeSlicing": {"resources": [{"name": GPU_RESOURCE, "replicas": 3, **resource}]}},
    }


def lint(text: str) -> list[str]:
    return [f"{p.line}:{p.column} {p.level} {p.desc} ({p.rule})" for p in linter.run(text, YAMLLINT_CONFIG)]


# --- built from settings ----------------------------------------------------------------------


@pytest.mark.parametrize("sharing", VARIANTS, ids=lambda s: s.profile)
def test_rendered_config_round_trips_through_the_model(sharing: GpuSharingSettings) -> None:
    config = plugin_config_for(sharing)
    text = render_config(config)
    assert parse_config(text) == config
    assert render_config(parse_config(text)) == text


@pytest.mark.parametrize("sharing", VARIANTS, ids=lambda s: s.profile)
def test_rendered_config_says_what_the_settings_say(sharing: GpuSharingSettings) -> None:
    data = yaml.safe_load(render_config(plugin_config_for(sharing)))
    assert data["version"] == "v1"
    assert data["flags"]["migStrategy"] == "none"
    assert data["flags"]["failOnInitError"] is True
    if sharing.strategy == "none":
        assert "sharing" not in data
        assert "mpsRoot" not in data["flags"]
        return
    block_key = {"time-slicing": "timeSlicing", "mps": "mps"}[sharing.strategy]
    assert list(data["sharing"]) == [block_key]
    block = data["sharing"][block_key]
    # Karpenter only knows nvidia.com/gpu: a renamed nvidia.com/gpu.shared would be unschedulable.
    assert block["renameByDefault"] is False
    assert block["failRequestsGreaterThanOne"] is sharing.fail_requests_greater_than_one
    assert block["resources"] == [{"name": GPU_RESOURCE, "replicas": sharing.replicas}]
    assert ("mpsRoot" in data["flags"]) is (sharing.strategy == "mps")


def test_staging_shares_each_gpu_three_ways() -> None:
    settings = settings_for("staging")
    config = plugin_config_for(settings.gpu_sharing)
    assert config.strategy == "time-slicing"
    assert config.sharing is not None and config.sharing.time_slicing is not None
    assert [r.replicas for r in config.sharing.time_slicing.resources] == [settings.gpu_sharing.replicas] == [3]


def test_mps_config_names_the_mps_root() -> None:
    config = plugin_config_for(GpuSharingSettings(strategy="mps", replicas=4))
    assert config.strategy == "mps"
    # Not the chart's `/run/nvidia/mps` (values.yaml `mps.root` @ v0.20.0): a directory no vendor package owns, so
    # the notebooks' non-root MPS servers can traverse every directory above their pipes (docs/sharing-kinds.md).
    assert config.flags.mps_root == "/run/gpu-platform/mps"
    assert not config.flags.mps_root.startswith("/run/nvidia/")


@pytest.mark.parametrize("sharing", VARIANTS, ids=lambda s: s.profile)
def test_rendered_config_passes_yamllint(sharing: GpuSharingSettings) -> None:
    assert lint(render_config(plugin_config_for(sharing))) == []


def test_yamllint_catches_a_duplicated_key() -> None:
    text = render_config(plugin_config_for(GpuSharingSettings(strategy="time-slicing", replicas=3)))
    duplicated = text.replace("replicas: 3", "replicas: 3\n      replicas: 8")
    assert yaml.safe_load(duplicated)["sharing"]["timeSlicing"]["resources"][0]["replicas"] == 8  # PyYAML: silent
    assert any("duplication of key" in p and "error" in p for p in lint(duplicated))
    with pytest.raises(yaml.YAMLError, match="duplicated key"):
        parse_config(duplicated)


# --- the plugin's rules, enforced by the model ------------------------------------------------


@pytest.mark.parametrize(
    ("misplaced", "where"),
    [
        ({"version": "v1", "flags": {"renameByDefault": False}}, "flags.renameByDefault"),  # issue #1433
        ({"version": "v1", "flags": {"failRequestsGreaterThanOne": True}}, "flags.failRequestsGreaterThanOne"),
        ({"version": "v1", "sharing": {"timeslicing": {"resources": []}}}, "sharing.timeslicing"),
        ({"version": "v1", "sharing": {"timeSlicing": {"replicas": 3, "resources": []}}}, "timeSlicing.replicas"),
        ({"version": "v1", "flags": {"mig_strategy": "none"}}, "flags.mig_strategy"),  # a Python name, not the JSON tag
        ({"version": "v1", "flags": {"plugin": {"deviceIdStrategy": "uuid"}}}, "plugin.deviceIdStrategy"),
        ({"version": "v1", "resources": {"gpus": []}}, "resources"),  # ignored by the plugin
        ({"version": "v1", "flags": {"gfd": {"oneshot": True}}}, "flags.gfd"),  # GFD only
    ],
)
def test_unknown_or_misplaced_keys_are_rejected(misplaced: dict[str, Any], where: str) -> None:
    with pytest.raises(ValidationError) as raised:
        parse_config(yaml.safe_dump(misplaced))
    assert where in str(raised.value)


def test_renamebydefault_under_flags_in_the_rendered_file_breaks_parsing() -> None:
    text = render_config(plugin_config_for(GpuSharingSettings(strategy="time-slicing", replicas=3)))
    misplaced = text.replace("  migStrategy: none\n", "  migStrategy: none\n  renameByDefault: false\n")
    assert misplaced != text
    with pytest.raises(ValidationError, match=r"flags\.renameByDefault"):
        parse_config(misplaced)


@pytest.mark.parametrize(
    ("resource", "message"),
    [
        ({"replicas": 1}, "greater than or equal to 2"),  # 1 is a parse error in the plugin, not "off"
        ({"replicas": 0}, "greater than or equal to 2"),
        ({"replicas": -1}, "greater than or equal to 2"),
        ({"replicas": "3"}, "valid integer"),  # Go's json.Unmarshal into int refuses a string
        ({"replicas": True}, "valid integer"),
        ({"name": "$invalid$"}, "DNS subdomain"),
        ({"name": "nvidia.com/" + "a" * (MAX_RESOURCE_NAME_LENGTH - len("nvidia.com/") + 1)}, "63 characters"),
        ({"name": "nvidia.com/gpus"}, "not a resource the plugin advertises"),  # silently skipped by the plugin
        ({"devices": "some"}, "devices"),
        ({"devices": 0}, "devices"),
        ({"devices": ["GPU-not-a-uuid"]}, "not a GPU index"),
        ({"devices": [-1]}, "GPU index must be >= 0"),
    ],
)
def test_resource_rules(resource: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_config(yaml.safe_dump(ts_config(**resource)))


@pytest.mark.parametrize(
    "resource",
    [
        {"name": "gpu"},  # the plugin adds the nvidia.com/ prefix
        {"name": "nvidia.com/mig-1g.5gb"},
        {"devices": "all"},
        {"devices": 2},
        {"devices": [0, "1", "0:1", GPU_UUID, f"MIG-{GPU_UUID[4:]}", f"MIG-{GPU_UUID}/3/0"]},
        {"replicas": 2},
    ],
)
def test_valid_forms_the_plugin_accepts(resource: dict[str, Any]) -> None:
    config = parse_config(yaml.safe_dump(ts_config(**resource)))
    assert config.strategy == "time-slicing"


def test_name_prefix_is_added_like_the_plugin_does() -> None:
    assert full_resource_name("gpu") == full_resource_name(GPU_RESOURCE) == GPU_RESOURCE


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"version": "v2"}, "version"),
        ({"sharing": {"timeSlicing": {"resources": []}}}, "at least 1 item"),
        ({"sharing": {"timeSlicing": {}}}, "resources"),
        (
            {
                "sharing": {
                    "timeSlicing": {"resources": [{"name": "gpu", "replicas": 2}]},
                    "mps": {"resources": [{"name": "gpu", "replicas": 2}]},
                },
                "flags": {"mpsRoot": MPS_ROOT},
            },
            "only one of timeSlicing or mps",
        ),
        ({"sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 2}]}}}, "mpsRoot"),
        (
            {
                "flags": {"mpsRoot": MPS_ROOT, "migStrategy": "mixed"},
                "sharing": {"mps": {"resources": [{"name": "gpu", "replicas": 2}]}},
            },
            "mixed",
        ),
        (
            {
                "flags": {"mpsRoot": MPS_ROOT},
                "sharing": {"mps": {"resources": [{"name": "gpu", "replicas": MPS_MAX_REPLICAS + 1}]}},
            },
            f"at most {MPS_MAX_REPLICAS} clients",
        ),
        ({"flags": {"migStrategy": "half"}}, "migStrategy"),
        ({"flags": {"plugin": {"deviceListStrategy": ["envvar", "nvml"]}}}, "deviceListStrategy"),
        ({"flags": {"plugin": {"sharedDevicesAllocationPolicy": "spread"}}}, "sharedDevicesAllocationPolicy"),
        ({"imex": {"channelIDs": [1]}}, "channelIDs"),
    ],
)
def test_config_rules(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_config(yaml.safe_dump(raw))


def test_an_empty_version_means_v1_like_the_plugin() -> None:
    assert parse_config(yaml.safe_dump({"flags": {"migStrategy": "none"}})).version == "v1"


@pytest.mark.parametrize("text", ["", "- a list\n", "just text\n", "a: [unclosed\n"])
def test_not_a_config_mapping(text: str) -> None:
    with pytest.raises((ValueError, yaml.YAMLError)):
        parse_config(text)


# --- settings reject every value the plugin would refuse ----------------------------------------


def plugin_accepts(strategy: str, replicas: int, fail_requests_greater_than_one: bool) -> bool:
    """Whether the plugin's rules accept this sharing as a raw config (independent of settings)."""
    if strategy == "none":
        raw: dict[str, Any] = {}
    else:
        block = {
            "renameByDefault": False,
            "failRequestsGreaterThanOne": fail_requests_greater_than_one,
            "resources": [{"name": GPU_RESOURCE, "replicas": replicas}],
        }
        key = "mps" if strategy == "mps" else "timeSlicing"
        raw = {"flags": {"mpsRoot": MPS_ROOT} if strategy == "mps" else {}, "sharing": {key: block}}
    try:
        PluginConfig.model_validate(raw, by_alias=True, by_name=False)
    except ValidationError:
        return False
    return True


@given(
    strategy=st.sampled_from(["time-slicing", "mps", "none"]),
    replicas=st.integers(min_value=-3, max_value=100),
    strict=st.booleans(),
)
def test_settings_accept_only_configs_the_plugin_accepts(strategy: str, replicas: int, strict: bool) -> None:
    try:
        sharing = GpuSharingSettings.model_validate(
            {"strategy": strategy, "replicas": replicas, "failRequestsGreaterThanOne": strict}
        )
    except ValidationError:
        return  # refused at settings time, with the key path
    # Accepted by settings: the plugin's rules accept it too, and the built config matches it.
    assert strategy == "none" or plugin_accepts(strategy, replicas, strict)
    config = plugin_config_for(sharing)
    assert parse_config(render_config(config)) == config
    assert config.strategy == strategy


@given(
    strategy=st.sampled_from(["time-slicing", "mps"]),
    replicas=st.integers(min_value=-3, max_value=100),
)
def test_what_the_plugin_refuses_never_reaches_the_plugin(strategy: str, replicas: int) -> None:
    if plugin_accepts(strategy, replicas, True):
        return
    with pytest.raises(ValidationError):
        GpuSharingSettings.model_validate({"strategy": strategy, "replicas": replicas})
