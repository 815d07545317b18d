"""Device-plugin Kubernetes objects: strict schema, wiring, placement, security, checksum."""

from __future__ import annotations

import contextlib
import copy
import hashlib
import re
from typing import Any

import kubernetes_validate
import pytest
import yaml

from components.facts.constants import (
    GPU_LABEL_KEY,
    GPU_TAINT,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    gpu_node_labels,
)
from components.renderers.device_plugin.device_plugin_config import parse_config, plugin_config_for
from components.renderers.device_plugin.device_plugin_manifests import (
    CHECKSUM_ANNOTATION,
    DEVICE_PLUGINS_DIR,
    PLUGIN_CHECKOV_SKIPS,
    ProfileObjects,
    device_plugin_objects,
    required_capabilities,
)
from components.renderers.manifest_helpers import CHECKOV_SKIP_ANNOTATION_PREFIX
from components.settings import GpuSharingSettings
from tests.support.checkov_allowlist import SKIPPABLE_CHECKS
from tests.support.k8s_validation import (
    SchemaNotFoundError,
    containers_of,
    deny_all_problems,
    pod_can_land_on,
    selector_problems,
    selects,
    skip_reasons,
    tolerates,
    unmounted_volume_problems,
    validate_core_object,
)
from tests.support.pins import PINNED_PLUGIN_IMAGE
from tests.support.settings import settings_for

STACKS = {stack: settings_for(stack) for stack in ("staging", "prod")}
SHARINGS = [
    *{s.profile: s for settings in STACKS.values() for s in settings.sharing_profiles}.values(),
    GpuSharingSettings(strategy="mps", replicas=4),
    GpuSharingSettings(strategy="none", replicas=1),
]
PROFILES = {s.profile: device_plugin_objects(s) for s in SHARINGS}
KUBERNETES_VERSIONS = sorted({s.kubernetes_version for s in STACKS.values()})


def objects_of(profile: ProfileObjects) -> list[dict[str, Any]]:
    return [profile.config_map, *profile.daemon_sets, *profile.network_policies]


def pod_spec(daemon_set: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = daemon_set["spec"]["template"]["spec"]
    return spec


def env_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}


def volume(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in spec["volumes"] if v["name"] == name)


def mount_source(spec: dict[str, Any], container: dict[str, Any], path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The mount whose mountPath is `path` and the volume it names."""
    mount = next(m for m in container["volumeMounts"] if m["mountPath"] == path)
    return mount, volume(spec, mount["name"])


# --- schema ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kubernetes_version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("profile", PROFILES.values(), ids=lambda p: p.profile)
def test_every_object_validates_strictly(profile: ProfileObjects, kubernetes_version: str) -> None:
    for obj in objects_of(profile):
        assert validate_core_object(obj, kubernetes_version) == []
        # The library's own strict check agrees (it stops at the first error).
        kubernetes_validate.validate(obj, kubernetes_version, strict=True)


def test_the_validator_reports_all_errors_not_just_the_first() -> None:
    broken = copy.deepcopy(PROFILES["time-slicing-3"].daemon_set)
    broken["metadata"]["lables"] = {}
    pod_spec(broken)["tolerattions"] = []
    pod_spec(broken)["containers"][0]["volumeMounts"][0]["mountPath"] = 42
    errors = validate_core_object(broken, KUBERNETES_VERSIONS[0])
    assert len(errors) == 3, errors
    assert any("'lables' was unexpected" in e for e in errors)
    assert any("'tolerattions' was unexpected" in e for e in errors)
    assert any("mountPath: 42 is not of type 'string'" in e for e in errors)


def test_the_validator_refuses_kinds_it_has_no_schema_for() -> None:
    with pytest.raises(SchemaNotFoundError):
        validate_core_object({"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "x"}}, "1.35")


# --- wiring -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES.values(), ids=lambda p: p.profile)
def test_selectors_volumes_and_names(profile: ProfileObjects) -> None:
    for daemon_set in profile.daemon_sets:
        assert daemon_set["metadata"]["namespace"] == "kube-system"
        assert profile.profile in daemon_set["metadata"]["name"]
        assert selector_problems(daemon_set) == []
        assert unmounted_volume_problems(pod_spec(daemon_set)) == []
    selectors = [tuple(sorted(ds["spec"]["selector"]["matchLabels"].items())) for ds in profile.daemon_sets]
    assert len(set(selectors)) == len(selectors), "the MPS daemon must not share the plugin's selector (#982)"


@pytest.mark.parametrize("profile", PROFILES.values(), ids=lambda p: p.profile)
def test_each_daemon_set_has_a_deny_all_network_policy_for_exactly_its_pods(profile: ProfileObjects) -> None:
    assert len(profile.network_policies) == len(profile.daemon_sets)
    for policy, daemon_set in zip(profile.network_policies, profile.daemon_sets, strict=True):
        assert policy["apiVersion"] == "networking.k8s.io/v1"
        assert deny_all_problems(policy, daemon_set) == []
        # ...and no other DaemonSet's pods: not the MPS daemon's next to the plugin, not another profile's.
        others = [ds for p in PROFILES.values() for ds in p.daemon_sets if ds is not daemon_set]
        assert not any(selects(policy, ds["spec"]["template"]["metadata"]["labels"]) for ds in others)


def test_the_deny_all_check_is_not_vacuous() -> None:
    (policy,), daemon_set = PROFILES["time-slicing-3"].network_policies, PROFILES["time-slicing-3"].daemon_set
    broad, one_way, allowing = copy.deepcopy(policy), copy.deepcopy(policy), copy.deepcopy(policy)
    broad["spec"]["podSelector"] = {}
    one_way["spec"]["policyTypes"] = ["Ingress"]
    allowing["spec"]["egress"] = [{}]
    for broken, fragment in [(broad, "every pod"), (one_way, "direction"), (allowing, "allows")]:
        assert any(fragment in problem for problem in deny_all_problems(broken, daemon_set))
    assert deny_all_problems(policy, PROFILES["mps-4"].daemon_set) != []


def test_the_plugin_carries_its_checkov_skips_with_reasons() -> None:
    for profile in PROFILES.values():
        skips = skip_reasons(profile.daemon_set)
        assert skips == dict(PLUGIN_CHECKOV_SKIPS)
        assert set(skips) <= set(SKIPPABLE_CHECKS)
        assert all(len(reason.split()) >= 4 for reason in skips.values()), skips
        # checkov reads only the object's own annotations: none belong on the pod template.
        template_annotations = profile.daemon_set["spec"]["template"]["metadata"]["annotations"]
        assert not any(k.startswith(CHECKOV_SKIP_ANNOTATION_PREFIX) for k in template_annotations)


@pytest.mark.parametrize("profile", PROFILES.values(), ids=lambda p: p.profile)
def test_the_plugin_reads_the_mounted_config(profile: ProfileObjects) -> None:
    assert profile.config_map["metadata"]["namespace"] == "kube-system"
    for daemon_set in profile.daemon_sets:
        spec = pod_spec(daemon_set)
        container = spec["containers"][0]
        config_file = env_of(container)["CONFIG_FILE"]
        directory, _, key = config_file.rpartition("/")
        mount, source = mount_source(spec, container, directory)
        assert mount["readOnly"] is True
        assert source["configMap"]["name"] == profile.config_map["metadata"]["name"]
        assert [item["path"] for item in source["configMap"]["items"] if item["key"] == key] == [key]
        # The file the plugin reads is the rendered config, and it parses back to the typed model.
        assert parse_config(profile.config_map["data"][key]) == profile.config


@pytest.mark.parametrize("profile", PROFILES.values(), ids=lambda p: p.profile)
def test_plugin_container(profile: ProfileObjects) -> None:
    daemon_set = profile.daemon_set
    assert daemon_set["spec"]["updateStrategy"]["type"] == "RollingUpdate"
    spec = pod_spec(daemon_set)
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "hostPID" not in spec and "hostNetwork" not in spec
    (container,) = spec["containers"]
    assert container["image"] == PINNED_PLUGIN_IMAGE
    # The version label is the tag next to the digest.
    assert daemon_set["metadata"]["labels"]["app.kubernetes.io/version"] == "v0.20.0"
    _, sockets = mount_source(spec, container, DEVICE_PLUGINS_DIR)
    assert sockets["hostPath"] == {"path": DEVICE_PLUGINS_DIR, "type": "Directory"}
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    # Set on purpose: the NVIDIA runtime's hooks write into the container root (see GPU_CONTAINER_READ_ONLY_ROOT).
    assert security["readOnlyRootFilesystem"] is False
    # ...and the read-only config mount stays out of /etc/nvidia, where the toolkit's hooks create a directory.
    assert all(not m["mountPath"].startswith("/etc/nvidia/") for m in container["volumeMounts"])
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in security
    assert set(container["resources"]) == {"requests", "limits"}
    assert {"cpu", "memory"} <= set(container["resources"]["requests"]) & set(container["resources"]["limits"])
    # Env beats the config file (NVIDIA/k8s-device-plugin api/config/v1/flags.go @ v0.20.0, docs/validation.md):
    # nothing may override what the file says.
    overriding = {
        "MIG_STRATEGY",
        "FAIL_ON_INIT_ERROR",
        "DEVICE_LIST_STRATEGY",
        "DEVICE_ID_STRATEGY",
        "PASS_DEVICE_SPECS",
    }
    assert not overriding & set(env_of(container))


def test_a_strategy_that_needs_a_capability_gets_exactly_that_one() -> None:
    base = plugin_config_for(GpuSharingSettings(strategy="time-slicing", replicas=3))
    assert required_capabilities(base) == []
    assert base.flags.plugin is not None
    volume_mounts = base.model_copy(
        update={
            "flags": base.flags.model_copy(
                update={"plugin": base.flags.plugin.model_copy(update={"device_list_strategy": ["volume-mounts"]})}
            )
        }
    )
    mig = base.model_copy(update={"flags": base.flags.model_copy(update={"mig_strategy": "single"})})
    assert required_capabilities(volume_mounts) == required_capabilities(mig) == ["SYS_ADMIN"]


# --- placement ----------------------------------------------------------------------------------


def test_the_toleration_matches_the_gpu_taint() -> None:
    for profile in PROFILES.values():
        for daemon_set in profile.daemon_sets:
            tolerations = pod_spec(daemon_set)["tolerations"]
            assert any(tolerates(t, GPU_TAINT) for t in tolerations)
    # The helper is not vacuous.
    assert not tolerates({"key": "other", "operator": "Exists", "effect": "NoSchedule"}, GPU_TAINT)
    assert not tolerates({"key": GPU_TAINT["key"], "operator": "Equal", "value": "false"}, GPU_TAINT)


WELL_KNOWN = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
SYSTEM_NODE = {
    **WELL_KNOWN,
    SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE,
    "node.kubernetes.io/instance-type": "m6i.large",
}


@pytest.mark.parametrize("profile", PROFILES.values(), ids=lambda p: p.profile)
def test_the_daemon_sets_land_only_on_gpu_nodes_of_their_profile(profile: ProfileObjects) -> None:
    for daemon_set in profile.daemon_sets:
        spec = pod_spec(daemon_set)
        gpu_node = {**WELL_KNOWN, "node.kubernetes.io/instance-type": "g4dn.xlarge", **gpu_node_labels(profile.profile)}
        assert pod_can_land_on(spec, gpu_node) is True
        assert pod_can_land_on(spec, SYSTEM_NODE) is False
        assert pod_can_land_on(spec, {GPU_LABEL_KEY: gpu_node_labels(profile.profile)[GPU_LABEL_KEY]}) is False
        for other in PROFILES:
            if other != profile.profile:
                assert pod_can_land_on(spec, gpu_node_labels(other)) is False


@pytest.mark.parametrize("stack", STACKS)
def test_every_gpu_pool_runs_exactly_one_plugin_with_its_replicas(stack: str) -> None:
    """Managed group and each Karpenter pool: one plugin lands there, and it shares with the pool's replicas.

    The Karpenter NodeOverlay advertises `settings.resolved.pool(pool.name).sharing.replicas` per GPU; this is the
    plugin making that number true.
    """
    settings = STACKS[stack]
    stack_profiles = [device_plugin_objects(s) for s in settings.sharing_profiles]
    pools = settings.resolved.pools
    assert pools
    for pool in pools:
        sharing = pool.sharing
        landing = [
            p for p in stack_profiles if pod_can_land_on(pod_spec(p.daemon_set), gpu_node_labels(sharing.profile))
        ]
        assert len(landing) == 1
        (profile,) = landing
        assert profile.config.strategy == sharing.strategy
        if sharing.strategy == "none":  # whole GPUs and g6f slices: the plugin advertises each device once
            assert profile.config.sharing is None
            continue
        replicated = profile.config.sharing
        assert replicated is not None
        block = replicated.time_slicing or replicated.mps
        assert block is not None and [r.replicas for r in block.resources] == [sharing.replicas]


def test_prod_runs_one_plugin_per_distinct_sharing() -> None:
    profiles = [s.profile for s in STACKS["prod"].sharing_profiles]
    assert profiles == sorted(set(profiles))
    # T4 pool on the stack default (3), A10G pool overridden (4), the g6f pool whole (exclusive).
    assert profiles == ["exclusive", "time-slicing-3", "time-slicing-4"]


# --- MPS --------------------------------------------------------------------------------------------


def test_mps_adds_the_control_daemon_the_plugin_waits_for() -> None:
    profile = PROFILES["mps-4"]
    assert profile.mps_control_daemon_set is not None
    mps_root = profile.config.flags.mps_root
    assert mps_root
    plugin_spec = pod_spec(profile.daemon_set)
    (plugin,) = plugin_spec["containers"]
    assert env_of(plugin)["MPS_ROOT"] == mps_root
    spec = pod_spec(profile.mps_control_daemon_set)
    assert spec["hostPID"] is True
    (init,) = spec["initContainers"]
    assert init["command"] == ["mps-control-daemon", "mount-shm"]
    assert init["securityContext"] == {"privileged": True}
    assert init["volumeMounts"][0]["mountPropagation"] == "Bidirectional"
    (daemon,) = spec["containers"]
    assert daemon["command"] == ["mps-control-daemon"]
    assert daemon["image"] == init["image"] == PINNED_PLUGIN_IMAGE
    # Plugin and daemon meet in the same host directories.
    for path in ("/mps", "/dev/shm"):
        _, plugin_volume = mount_source(plugin_spec, plugin, path)
        _, daemon_volume = mount_source(spec, daemon, path)
        assert plugin_volume["hostPath"]["path"] == daemon_volume["hostPath"]["path"]
        assert plugin_volume["hostPath"]["path"].startswith(mps_root)
    # Only the MPS daemon is privileged.
    assert "privileged" not in plugin["securityContext"]


def test_only_mps_profiles_run_a_control_daemon() -> None:
    for profile in PROFILES.values():
        assert (profile.mps_control_daemon_set is not None) is (profile.config.strategy == "mps")
        if profile.config.strategy != "mps":
            for container in containers_of(pod_spec(profile.daemon_set)):
                assert "MPS_ROOT" not in env_of(container)
                assert all(m["mountPath"] not in ("/mps", "/dev/shm") for m in container["volumeMounts"])


# --- config changes restart the plugin ---------------------------------------------------------


def test_the_checksum_is_the_sha256_of_the_config() -> None:
    for profile in PROFILES.values():
        expected = hashlib.sha256(profile.config_text.encode()).hexdigest()
        for daemon_set in profile.daemon_sets:
            assert daemon_set["spec"]["template"]["metadata"]["annotations"][CHECKSUM_ANNOTATION] == expected


@pytest.mark.parametrize("strategy", ["time-slicing", "mps"])
def test_changing_replicas_changes_the_pod_template_checksum(strategy: str) -> None:
    three = device_plugin_objects(GpuSharingSettings(strategy=strategy, replicas=3))
    four = device_plugin_objects(GpuSharingSettings(strategy=strategy, replicas=4))
    for before, after in zip(three.daemon_sets, four.daemon_sets, strict=True):
        annotations = (
            before["spec"]["template"]["metadata"]["annotations"],
            after["spec"]["template"]["metadata"]["annotations"],
        )
        assert annotations[0][CHECKSUM_ANNOTATION] != annotations[1][CHECKSUM_ANNOTATION]
    # Rendering is deterministic: the same settings give the same checksum.
    again = device_plugin_objects(GpuSharingSettings(strategy=strategy, replicas=3))
    assert again.daemon_set == three.daemon_set


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def every_valid_sharing() -> list[GpuSharingSettings]:
    valid = []
    for strategy in ("time-slicing", "mps", "none"):
        for replicas in range(1, 101):
            for strict in (True, False):
                with contextlib.suppress(ValueError):
                    valid.append(
                        GpuSharingSettings(strategy=strategy, replicas=replicas, fail_requests_greater_than_one=strict)
                    )
    return valid


def test_names_and_labels_stay_valid_for_every_profile_settings_allow() -> None:
    """The API server checks what the schema cannot: DNS names and 63-character label values."""
    sharings = every_valid_sharing()
    assert len({s.profile for s in sharings}) > 100
    for sharing in sharings:
        for obj in objects_of(device_plugin_objects(sharing)):
            name = obj["metadata"]["name"]
            assert len(name) <= 63 and _DNS_SUBDOMAIN.match(name), name
            label_sets = [obj["metadata"]["labels"]]
            if obj["kind"] == "DaemonSet":
                label_sets.append(obj["spec"]["template"]["metadata"]["labels"])
                terms = pod_spec(obj)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                label_sets += [
                    {e["key"]: v}
                    for t in terms["nodeSelectorTerms"]
                    for e in t["matchExpressions"]
                    for v in e["values"]
                ]
            for labels in label_sets:
                for value in labels.values():
                    assert len(value) <= 63 and _LABEL_VALUE.match(value), value


def test_manifests_share_no_objects() -> None:
    """Each manifest is its own tree: mutating one never changes another, and YAML dumps carry no aliases."""
    first, second = device_plugin_objects(SHARINGS[0]), device_plugin_objects(SHARINGS[0])
    pod_spec(first.daemon_set)["tolerations"][0]["key"] = "changed"
    pod_spec(first.daemon_set)["containers"][0]["resources"]["limits"]["memory"] = "1Ti"
    assert second.daemon_set == device_plugin_objects(SHARINGS[0]).daemon_set
    for profile in PROFILES.values():
        for obj in objects_of(profile):
            assert "&id" not in yaml.safe_dump(obj)
