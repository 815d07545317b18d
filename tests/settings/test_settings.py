"""Every settings check has a failing example whose error names the key path and what is allowed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.settings import (
    SUPPORTED_KUBERNETES_VERSIONS,
    SettingsError,
    StackSettings,
    allowed_config_keys,
    load_settings,
)
from tests.conftest import STACKS
from tests.support.config_edits import merged as _merged  # short local names: every test here edits a config
from tests.support.config_edits import with_value as _with
from tests.support.settings import settings_for


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_file_is_valid(stack: str) -> None:
    settings = settings_for(stack)
    assert isinstance(settings, StackSettings)
    assert settings.gpu_sharing.strategy in ("time-slicing", "mps", "none")


def test_staging_seed_values() -> None:
    settings = settings_for("staging")
    assert (settings.region, settings.cluster_name) == ("us-west-1", "nextgen-learninglab")
    assert (settings.gpu_sharing.strategy, settings.gpu_sharing.replicas) == ("time-slicing", 3)
    assert settings.gpu_node_group.instance_types == ["g4dn.xlarge"]
    assert (settings.gpu_nodes.max_pods, settings.gpu_nodes.pod_pids_limit) == (110, 32768)
    assert settings.kubernetes_version in SUPPORTED_KUBERNETES_VERSIONS


# (top-level key, deep patch or raw value, expected key path, fragment of the message)
BAD_VALUES: list[tuple[str, Any, str, str]] = [
    ("aws:region", "mars-east-1", "aws:region", "allowed: us-east-1"),
    ("gpu-platform:clusterName", "x" * 44, "gpu-platform:clusterName", "at most 43 characters"),
    ("gpu-platform:clusterName", "9-lives", "gpu-platform:clusterName", "start with a letter"),
    ("gpu-platform:kubernetesVersion", "1.29", "gpu-platform:kubernetesVersion", "allowed: 1.34"),
    ("gpu-platform:protectResources", "maybe", "gpu-platform:protectResources", "true or false"),
    ("gpu-platform:network", {"vpcCidr": "10.0.0.0/33"}, "gpu-platform:network.vpcCidr", "IPv4 CIDR"),
    ("gpu-platform:network", {"vpcCidr": "10.0.0.1/16"}, "gpu-platform:network.vpcCidr", "IPv4 CIDR"),
    ("gpu-platform:network", {"vpcCidr": "10.0.0.0/24"}, "gpu-platform:network.vpcCidr", "/16 to /20"),
    ("gpu-platform:network", {"availabilityZones": 1}, "gpu-platform:network.availabilityZones", "between 2 and 4 (got 1)"),
    ("gpu-platform:network", {"natGateways": "many"}, "gpu-platform:network.natGateways", "'single' or 'one-per-az'"),
    ("gpu-platform:network", {"existing": {"vpcId": "vpc-1", "privateSubnetIds": []}}, "gpu-platform:network.existing.vpcId", "VPC id like vpc-"),
    ("gpu-platform:network", {"existing": {"vpcId": "vpc-0abc1234", "privateSubnetIds": []}}, "gpu-platform:network.existing.privateSubnetIds", "at least 2 item(s)"),
    ("gpu-platform:network", {"existing": {"vpcId": "vpc-0abc1234", "privateSubnetIds": ["subnet-1", "subnet-2"]}}, "gpu-platform:network.existing.privateSubnetIds[0]", "subnet id like subnet-"),
    ("gpu-platform:network", {"vpcCIDR": "10.0.0.0/16"}, "gpu-platform:network.vpcCIDR", "unknown key"),
    ("gpu-platform:cluster", {"publicAccessCidrs": []}, "gpu-platform:cluster.publicAccessCidrs", "at least one CIDR"),
    ("gpu-platform:cluster", {"publicAccessCidrs": ["0.0.0.0/0"]}, "gpu-platform:cluster.publicAccessCidrs", "not allowed"),
    ("gpu-platform:cluster", {"adminPrincipalArns": ["admin"]}, "gpu-platform:cluster.adminPrincipalArns[0]", "IAM role or user ARN"),
    ("gpu-platform:cluster", {"logTypes": ["everything"]}, "gpu-platform:cluster.logTypes[0]", "'api'"),
    ("gpu-platform:cluster", {"vpcCni": {"prefixDelegation": "sometimes"}}, "gpu-platform:cluster.vpcCni.prefixDelegation", "true or false"),
    ("gpu-platform:systemNodes", {"minSize": 1}, "gpu-platform:systemNodes.minSize", "between 2 and 100"),
    ("gpu-platform:systemNodes", {"minSize": 3, "desiredSize": 2}, "gpu-platform:systemNodes.desiredSize", "minSize <= desiredSize"),
    ("gpu-platform:systemNodes", {"instanceTypes": ["large"]}, "gpu-platform:systemNodes.instanceTypes[0]", "instance type like m6i.large"),
    ("gpu-platform:gpuNodes", {"maxPods": 300}, "gpu-platform:gpuNodes.maxPods", "between 10 and 250 (got 300)"),
    ("gpu-platform:gpuNodes", {"maxPods": "many"}, "gpu-platform:gpuNodes.maxPods", "whole number"),
    ("gpu-platform:gpuNodes", {"podPidsLimit": 100}, "gpu-platform:gpuNodes.podPidsLimit", "between 1024 and 4194304"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"sizeGib": 10}}, "gpu-platform:gpuNodes.rootVolume.sizeGib", "between 20 and 65536"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"sizeGib": 20, "iops": 12000}}, "gpu-platform:gpuNodes.rootVolume.iops", "needs at least 24 GiB"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"sizeGib": 19, "iops": 3000}}, "gpu-platform:gpuNodes.rootVolume.sizeGib", "between 20 and"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"sizeGib": 100, "iops": 2000}}, "gpu-platform:gpuNodes.rootVolume.iops", "3000"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"iops": 90000, "sizeGib": 500}}, "gpu-platform:gpuNodes.rootVolume.iops", "80000"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"throughputMibps": 100}}, "gpu-platform:gpuNodes.rootVolume.throughputMibps", "125"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"throughputMibps": 3000}}, "gpu-platform:gpuNodes.rootVolume.throughputMibps", "2000"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"iops": 3000, "throughputMibps": 1000}}, "gpu-platform:gpuNodes.rootVolume.throughputMibps", "needs at least 4000 IOPS"),
    ("gpu-platform:gpuNodes", {"rootVolume": {"encrypted": False}}, "gpu-platform:gpuNodes.rootVolume.encrypted", "must be true"),
    ("gpu-platform:gpuNodes", {"prePullImages": ["tensorflow"]}, "gpu-platform:gpuNodes.prePullImages[0]", "fully qualified"),
    ("gpu-platform:gpuNodes", {"prePullImages": ["docker.io/library/busybox:latest"]}, "gpu-platform:gpuNodes.prePullImages[0]", "':latest'"),
    ("gpu-platform:gpuNodeGroup", {"enabled": True, "instanceTypes": ["m5.large"]}, "gpu-platform:gpuNodeGroup.instanceTypes[0]", "not a known NVIDIA GPU instance type"),
    ("gpu-platform:gpuNodeGroup", {"enabled": True, "instanceTypes": []}, "gpu-platform:gpuNodeGroup.instanceTypes", "at least 1 item"),
    ("gpu-platform:gpuNodeGroup", {"enabled": True, "capacityType": "RESERVED"}, "gpu-platform:gpuNodeGroup.capacityType", "'ON_DEMAND' or 'SPOT'"),
    ("gpu-platform:gpuNodeGroup", {"enabled": True, "minSize": 2, "desiredSize": 1}, "gpu-platform:gpuNodeGroup.maxSize", "minSize <= desiredSize"),
    ("gpu-platform:gpuSharing", {"strategy": "mig"}, "gpu-platform:gpuSharing.strategy", "'time-slicing', 'mps' or 'none'"),
    ("gpu-platform:gpuSharing", {"replicas": 1}, "gpu-platform:gpuSharing.replicas", "2..64 for time-slicing"),
    ("gpu-platform:gpuSharing", {"replicas": 0}, "gpu-platform:gpuSharing.replicas", "2..64 for time-slicing"),
    ("gpu-platform:gpuSharing", {"strategy": "mps", "replicas": 49}, "gpu-platform:gpuSharing.replicas", "2..48 for mps"),
    ("gpu-platform:gpuSharing", {"strategy": "none", "replicas": 3}, "gpu-platform:gpuSharing.replicas", "must be 1"),
    ("gpu-platform:gpuSharing", {"failRequestsGreaterThanOne": "yes please"}, "gpu-platform:gpuSharing.failRequestsGreaterThanOne", "true or false"),
    ("gpu-platform:gpuSharing", {"renameByDefault": True}, "gpu-platform:gpuSharing.renameByDefault", "unknown key"),
    ("gpu-platform:karpenter", {"replicas": 0}, "gpu-platform:karpenter.replicas", "between 1 and 5"),
    ("gpu-platform:demo", {"replicas": 0}, "gpu-platform:demo.replicas", "between 1 and 50"),
    ("gpu-platform:demo", {"namespace": "Learning_Lab"}, "gpu-platform:demo.namespace", "DNS label"),
    ("gpu-platform:demo", {"image": "docker.io/tensorflow/tensorflow"}, "gpu-platform:demo.image", "tag or digest"),
    ("gpu-platform:demo", {"image": "docker.io/tensorflow/tensorflow:latest"}, "gpu-platform:demo.image", "':latest' is not allowed"),
    ("gpu-platform:tags", {"": "x"}, 'gpu-platform:tags[""]', "1-128 characters"),
    ("gpu-platform:tags", {"aws:team": "x"}, 'gpu-platform:tags["aws:team"]', "reserved by AWS"),
    ("gpu-platform:cluster", {"adminPrincipalArns": ["arn:aws:iam::111122223333:role/a", "arn:aws:iam::111122223333:role/a"]}, "gpu-platform:cluster.adminPrincipalArns[1]", "each principal once"),
    ("gpu-platform:network", "[1, 2", "gpu-platform:network", "structured value"),
    ("gpu-platform:gpuSharng", {"strategy": "mps"}, "gpu-platform:gpuSharng", "did you mean 'gpu-platform:gpuSharing'?; allowed: "),
]  # fmt: skip

POOL = {"name": "g4-nodepool", "instanceTypes": ["g4dn.xlarge"]}
# (one pool's patch, expected key path under karpenter.nodePools[0], message fragment)
BAD_POOLS: list[tuple[dict[str, Any], str, str]] = [
    ({"name": "G4_pool"}, ".name", "DNS label"),
    ({"instanceTypes": ["p3.2xlarge"]}, ".instanceTypes[0]", "not a known NVIDIA GPU instance type"),
    ({"instanceFamilies": ["m5"], "instanceTypes": []}, ".instanceFamilies[0]", "not a known NVIDIA GPU family"),
    ({"instanceFamilies": ["g5"]}, "", "exactly one of instanceFamilies or instanceTypes"),
    ({"instanceTypes": []}, "", "exactly one of instanceFamilies or instanceTypes"),
    ({"capacityTypes": ["reserved"]}, ".capacityTypes[0]", "'on-demand' or 'spot'"),
    ({"capacityTypes": []}, ".capacityTypes", "at least 1 item"),
    ({"architectures": ["arm64"]}, ".architectures[0]", "'amd64'"),
    ({"gpuLimit": 0}, ".gpuLimit", "between 1 and 1000"),
    ({"cpuLimit": -1}, ".cpuLimit", "between 1 and 100000"),
    ({"expireAfter": "2 hours"}, ".expireAfter", "duration like"),
    ({"terminationGracePeriod": "Never"}, ".terminationGracePeriod", "duration like 30m"),
    ({"consolidateAfter": "soon"}, ".consolidateAfter", "duration like"),
    ({"consolidationPolicy": "WhenUnderutilized"}, ".consolidationPolicy", "'WhenEmpty'"),
    ({"disruptionBudgets": [{"nodes": "110%"}]}, ".disruptionBudgets[0].nodes", "percentage like"),
    ({"disruptionBudgets": [{"nodes": "1", "schedule": "@daily"}]}, ".disruptionBudgets[0].duration", "required with schedule"),
    ({"disruptionBudgets": [{"nodes": "1", "schedule": "not a cron", "duration": "1h"}]}, ".disruptionBudgets[0].schedule", "needs exactly 5"),
    ({"disruptionBudgets": [{"nodes": "1", "reasons": ["Bored"]}]}, ".disruptionBudgets[0].reasons[0]", "'Underutilized'"),
    ({"disruptionBudgets": []}, ".disruptionBudgets", "between 1 and 50 item(s)"),
    ({"weight": 101}, ".weight", "between 1 and 100"),
    ({"gpuSharing": {"strategy": "time-slicing", "replicas": 1}}, ".gpuSharing.replicas", "2..64"),
    ({"labels": {"a": "b"}}, ".labels", "unknown key"),
]  # fmt: skip


def _problems(config: dict[str, str]) -> list[tuple[str, str]]:
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    return caught.value.problems


@pytest.mark.parametrize(("key", "value", "path", "fragment"), BAD_VALUES, ids=[f"{c[2]}:{c[3]}" for c in BAD_VALUES])
def test_bad_value_names_its_key(
    stack_configs: dict[str, dict[str, str]], key: str, value: Any, path: str, fragment: str
) -> None:
    base = stack_configs["staging"]
    config = _merged(base, key, value) if isinstance(value, dict) and key in base else _with(base, key, value)
    problems = _problems(config)
    assert any(p == path and fragment in message for p, message in problems), problems


@pytest.mark.parametrize(
    ("patch", "suffix", "fragment"), BAD_POOLS, ids=[f"{c[1] or 'pool'}:{c[2]}" for c in BAD_POOLS]
)
def test_bad_node_pool_names_its_key(
    stack_configs: dict[str, dict[str, str]], patch: dict[str, Any], suffix: str, fragment: str
) -> None:
    config = _with(stack_configs["staging"], "gpu-platform:karpenter", {"nodePools": [{**POOL, **patch}]})
    problems = _problems(config)
    path = f"gpu-platform:karpenter.nodePools[0]{suffix}"
    assert any(p == path and fragment in message for p, message in problems), problems


def test_duplicate_pool_names_are_rejected(stack_configs: dict[str, dict[str, str]]) -> None:
    config = _with(stack_configs["staging"], "gpu-platform:karpenter", {"nodePools": [POOL, POOL]})
    assert any("repeated: g4-nodepool" in m for _, m in _problems(config))


def test_max_pods_must_fit_the_cni_without_prefix_delegation(stack_configs: dict[str, dict[str, str]]) -> None:
    config = _merged(stack_configs["staging"], "gpu-platform:cluster", {"vpcCni": {"prefixDelegation": False}})
    problems = _problems(config)
    assert ("gpu-platform:gpuNodes.maxPods", problems[0][1]) == problems[0]
    assert "29 pods" in problems[0][1] and "prefixDelegation" in problems[0][1]
    # ... and a limit the ENIs can serve is accepted.
    load_settings(_merged(config, "gpu-platform:gpuNodes", {"maxPods": 29}))


def test_demo_needs_gpu_capacity(stack_configs: dict[str, dict[str, str]]) -> None:
    config = _with(stack_configs["staging"], "gpu-platform:gpuNodeGroup", {"enabled": False})
    config = _with(config, "gpu-platform:karpenter", {"enabled": False})
    assert any(p == "gpu-platform:demo.enabled" for p, _ in _problems(config))


def test_required_keys_are_reported(stack_configs: dict[str, dict[str, str]]) -> None:
    config = _with(_with(stack_configs["staging"], "aws:region", None), "gpu-platform:clusterName", None)
    assert dict(_problems(config)) == {"aws:region": "required", "gpu-platform:clusterName": "required"}


def test_every_problem_is_reported_at_once(stack_configs: dict[str, dict[str, str]]) -> None:
    config = _with(stack_configs["staging"], "aws:region", "nowhere")
    config = _with(config, "gpu-platform:kubernetesVersion", "0.1")
    config = _merged(config, "gpu-platform:gpuSharing", {"replicas": 1})
    paths = {p for p, _ in _problems(config)}
    assert {"aws:region", "gpu-platform:kubernetesVersion", "gpu-platform:gpuSharing.replicas"} <= paths


def test_error_text_lists_allowed_keys_for_a_typo() -> None:
    problems = _problems({"aws:region": "us-west-1", "gpu-platform:clusterNmae": "x"})
    typo = dict(problems)["gpu-platform:clusterNmae"]
    assert all(key in typo for key in allowed_config_keys())


DIGEST = "sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    "image",
    [
        "docker.io/tensorflow/tensorflow:2.12.0-gpu",
        f"docker.io/tensorflow/tensorflow@{DIGEST}",
        f"nvcr.io/nvidia/k8s-device-plugin:v0.20.0@{DIGEST}",
        # A digest pins it, whatever the tag next to it says.
        f"registry.local:5000/team/image:latest@{DIGEST}",
    ],
)
def test_an_image_may_be_pinned_by_tag_digest_or_both(stack_configs: dict[str, dict[str, str]], image: str) -> None:
    settings = load_settings(_merged(stack_configs["staging"], "gpu-platform:demo", {"image": image}))
    assert settings.demo.image == image


def test_sharing_profiles_are_distinct_and_sorted() -> None:
    prod = settings_for("prod")
    profiles = [s.profile for s in prod.sharing_profiles]
    assert profiles == sorted(set(profiles)) == ["exclusive", "time-slicing-3", "time-slicing-4"]  # g6f: exclusive
    assert prod.resolved.pool(prod.karpenter.node_pools[1].name).sharing.replicas == 4
    assert prod.resolved.pool(prod.karpenter.node_pools[0].name).sharing == prod.gpu_sharing


@pytest.mark.parametrize(
    ("sharing", "replicas"), [({"strategy": "time-slicing"}, 2), ({"strategy": "mps"}, 2), ({"strategy": "none"}, 1)]
)
def test_replicas_default_per_strategy(
    stack_configs: dict[str, dict[str, str]], sharing: dict[str, str], replicas: int
) -> None:
    config = _with(stack_configs["staging"], "gpu-platform:gpuSharing", sharing)
    # Without the lab timetable: exclusive GPUs could not hold staging's session peak (9 GPUs > gpuLimit 8).
    labs = [{k: v for k, v in lab.items() if k != "sessions"} for lab in json.loads(config["gpu-platform:labs"])]
    settings = load_settings(_with(config, "gpu-platform:labs", labs))
    assert settings.gpu_sharing.replicas == replicas


# --- issue 17: a nested key written flat (`pulumi config set` without --path) -----------------------------------


@pytest.mark.parametrize(
    ("flat", "inside", "nested"),
    [
        ("gpu-platform:cluster.deployerPrincipalArn", "gpu-platform:cluster", "deployerPrincipalArn"),
        ("gpu-platform:observability.gpuMetrics", "gpu-platform:observability", "gpuMetrics"),
    ],
)
def test_a_nested_key_written_flat_says_where_it_goes_and_the_path_form(
    stack_configs: dict[str, dict[str, str]], flat: str, inside: str, nested: str
) -> None:
    config = {**stack_configs["staging"], flat: "arn:aws:iam::731245981032:role/deploy"}
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    ((path, message),) = caught.value.problems
    assert path == flat
    assert f"belongs inside the structured key '{inside}'" in message and f"`{nested}:`" in message
    assert f"pulumi config set --path '{flat}' <value>" in message
