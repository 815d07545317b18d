"""The first real `pulumi up` (a feature across layers): what it needs that the offline checks used to miss.

Availability zones without Local Zones, one AMI release for both GPU launchers, the demo never
holding `up` nor buying a second GPU node, the controller after CoreDNS, no unused OIDC provider,
no managed GPU group that can never scale, and a disruption window in the right time zone.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml

from components.demo import demo_placement
from components.facts.constants import (
    AL2023_AMI_KUBERNETES_PATCH,
    EKS_NODE_GROUP_LABEL_KEY,
    al2023_release_version,
    gpu_node_labels,
    managed_gpu_node_group_name,
)
from components.renderers.labs.demo_manifests import demo_affinity, demo_deployment, place_demo_deployment
from components.settings import (
    SUPPORTED_KUBERNETES_VERSIONS,
    CpuUserPoolSettings,
    SettingsError,
    load_settings,
)
from offline.mocks import availability_zones
from offline.plan import Plan
from offline.project_copy import copy_program
from tests.conftest import MANAGED_GPU_GROUP, PROJECT_DIR, STACKS, synth_in_process
from tests.support.config_edits import merged, with_value
from tests.support.k8s_validation import pod_can_land_on, validate_core_object
from tests.support.settings import settings_for

MANAGED_NODE_GROUP = "eks:index:ManagedNodeGroup"
GPU_GROUP_NAME = "gpu-nodes-mng"


# --- 6. availability zones -----------------------------------------------------------------------


def test_the_mocks_answer_like_an_account_with_a_local_zone() -> None:
    """Unfiltered, the opted-in Local Zone sorts first; the opt-in filter leaves the regular zones."""
    everything = availability_zones("us-west-2", {"state": "available"})["names"]
    assert everything[0] == "us-west-2-lax-1a"
    regular = availability_zones(
        "us-west-2", {"filters": [{"name": "opt-in-status", "values": ["opt-in-not-required"]}]}
    )["names"]
    assert regular == ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"]


@pytest.mark.parametrize("stack", STACKS)
def test_subnets_go_to_regular_availability_zones_only(plans: dict[str, Plan], stack: str) -> None:
    settings = settings_for(stack)
    zones = [s["inputs"]["availabilityZone"] for s in plans[stack].of_type("aws:ec2/subnet:Subnet")]
    assert zones, "the stack creates its VPC"
    assert all(re.fullmatch(re.escape(settings.region) + "[a-z]", zone) for zone in zones), zones


# --- 7. one AL2023 release for both GPU launchers --------------------------------------------------


def test_every_supported_kubernetes_version_has_its_release_patch() -> None:
    assert set(AL2023_AMI_KUBERNETES_PATCH) == set(SUPPORTED_KUBERNETES_VERSIONS)
    for minor, patch in AL2023_AMI_KUBERNETES_PATCH.items():
        assert re.fullmatch(re.escape(minor) + r"\.[0-9]+", patch)
    # The managed node group releaseVersion "<patch>-<date>" of release v20260724, written by hand from the
    # awslabs/amazon-eks-ami release notes that components/facts/constants.py cites.
    assert {minor: al2023_release_version(minor) for minor in SUPPORTED_KUBERNETES_VERSIONS} == {
        "1.34": "1.34.9-20260724",
        "1.35": "1.35.6-20260724",
        "1.36": "1.36.2-20260724",
    }


def test_managed_gpu_group_runs_the_ami_release_karpenter_pins(
    managed_group_plan: Plan, managed_group_config: dict[str, str]
) -> None:
    settings = load_settings(managed_group_config)
    group = managed_group_plan.one(MANAGED_NODE_GROUP, GPU_GROUP_NAME)["inputs"]
    user_pool = settings.karpenter.cpu_user_pool.name
    (node_class,) = [n for n in managed_group_plan.objects("EC2NodeClass") if n["metadata"]["name"] != user_pool]
    (alias,) = [term["alias"] for term in node_class["spec"]["amiSelectorTerms"]]
    karpenter_date = alias.removeprefix("al2023@v")
    assert group["releaseVersion"] == f"{AL2023_AMI_KUBERNETES_PATCH[settings.kubernetes_version]}-{karpenter_date}"
    assert group["version"] == settings.kubernetes_version


# --- 8. ordering and leftovers ---------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_karpenter_controller_waits_for_coredns(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    coredns = plan.one("aws:eks/addon:Addon", "cluster-coredns")
    controller = plan.one("kubernetes:helm.sh/v4:Chart", "karpenter-controller")
    assert coredns["urn"] in controller["dependencies"]


@pytest.mark.parametrize("stack", STACKS)
def test_no_iam_oidc_provider_without_irsa(plans: dict[str, Plan], stack: str) -> None:
    """Karpenter authenticates through EKS Pod Identity: nothing uses an IAM OIDC provider."""
    plan = plans[stack]
    assert plan.one("eks:index:Cluster", "cluster-eks")["inputs"]["createOidcProvider"] is False
    assert plan.of_type("aws:iam/openIdConnectProvider:OpenIdConnectProvider") == []
    assert plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert "oidcProviderArn" not in (PROJECT_DIR / "__main__.py").read_text(encoding="utf-8")


def test_a_managed_gpu_group_that_never_scales_is_rejected(stack_configs: dict[str, dict[str, str]]) -> None:
    config = merged(
        stack_configs["staging"], "gpu-platform:gpuNodeGroup", {**MANAGED_GPU_GROUP, "minSize": 0, "desiredSize": 0}
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    [(path, message)] = caught.value.problems
    assert path == "gpu-platform:gpuNodeGroup"
    assert "never scales" in message and "cluster-autoscaler" in message and "enabled: false" in message
    # Disabled (the switch alone) is fine; enabled with a floor of one as well.
    load_settings({**config, "gpu-platform:gpuNodeGroup": json.dumps({"enabled": False})})
    load_settings(merged(config, "gpu-platform:gpuNodeGroup", {"desiredSize": 1}))


def test_the_synth_exits_2_on_a_never_scaling_group(tmp_path: Path) -> None:
    copy_program(tmp_path)
    stack_file = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text(encoding="utf-8"))
    stack_file["config"]["gpu-platform:gpuNodeGroup"] = {**MANAGED_GPU_GROUP, "minSize": 0, "desiredSize": 0}
    (tmp_path / "Pulumi.broken.yaml").write_text(yaml.safe_dump(stack_file), encoding="utf-8")
    code, stdout, stderr = synth_in_process("broken", tmp_path / "out", tmp_path)
    assert code == 2, stderr
    assert "gpu-platform:gpuNodeGroup" in stderr and "never scales" in stderr
    assert "Traceback" not in stderr + stdout


def _blocked_utc(budgets: list[dict[str, Any]], instant: datetime) -> bool:
    """Whether a `nodes: "0"` budget of the form `M H * * <days>` (Karpenter: UTC) covers `instant`."""
    days = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
    for budget in budgets:
        if budget.get("nodes") != "0" or "schedule" not in budget:
            continue
        minute, hour, dom, month, weekday = budget["schedule"].split()
        assert (dom, month) == ("*", "*"), "this check reads day-of-week schedules only"
        first, _, last = weekday.partition("-")
        allowed = set(range(days[first], days[last or first] + 1))
        duration = timedelta(hours=int(budget["duration"].rstrip("h")))
        for back in range(8):  # a window starting on one of the last days
            day = (instant - timedelta(days=back)).date()
            start = datetime(day.year, day.month, day.day, int(hour), int(minute), tzinfo=UTC)
            if start.weekday() in allowed and start <= instant < start + duration:
                return True
    return False


def test_prod_freezes_disruption_through_pacific_business_hours() -> None:
    """08:00-18:00 US Pacific, Monday to Friday, in winter (PST) and summer (PDT)."""
    (pool,) = [p for p in settings_for("prod").karpenter.node_pools if p.name == "t4-shared"]
    budgets = [b.model_dump(exclude_none=True) for b in pool.disruption_budgets]
    pacific = ZoneInfo("America/Los_Angeles")
    for monday in (datetime(2026, 1, 12, tzinfo=pacific), datetime(2026, 7, 13, tzinfo=pacific)):
        for weekday in range(5):
            for hour in range(8, 18):
                local = (monday + timedelta(days=weekday)).replace(hour=hour, minute=30)
                assert _blocked_utc(budgets, local.astimezone(UTC)), local.isoformat()
        saturday_noon = (monday + timedelta(days=5)).replace(hour=12)
        assert not _blocked_utc(budgets, saturday_noon.astimezone(UTC))


def test_the_configuration_reference_says_budget_schedules_are_utc() -> None:
    reference = (PROJECT_DIR / "docs" / "configuration.md").read_text(encoding="utf-8")
    budget = "| `gpu-platform:karpenter.nodePools[].disruptionBudgets"
    rows = [line for line in reference.splitlines() if line.startswith((budget + "`", budget + "[].schedule`"))]
    assert len(rows) == 2 and all("UTC" in row for row in rows)


# --- 5. the demo neither holds `up` nor buys a second GPU node ---------------------------------------


def test_the_demo_skips_the_await_and_is_pinned_to_the_managed_gpu_nodes(
    managed_group_plan: Plan, managed_group_config: dict[str, str]
) -> None:
    settings = load_settings(managed_group_config)
    staging_plan = managed_group_plan
    (deployment,) = staging_plan.objects("Deployment")
    assert deployment["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    assert validate_core_object(deployment, settings.kubernetes_version) == []
    spec = deployment["spec"]["template"]["spec"]
    group_name = managed_gpu_node_group_name(settings.cluster_name)
    managed_node = {**gpu_node_labels(settings.gpu_sharing.profile), EKS_NODE_GROUP_LABEL_KEY: group_name}
    assert pod_can_land_on(spec, managed_node)
    # A Karpenter node carries the GPU labels but never the node-group label: Karpenter cannot serve these pods.
    for pool in staging_plan.objects("NodePool"):
        assert not pod_can_land_on(spec, pool["spec"]["template"]["metadata"]["labels"])
    group = staging_plan.one(MANAGED_NODE_GROUP, GPU_GROUP_NAME)
    assert group["inputs"]["nodeGroupName"] == group_name
    (resource,) = staging_plan.of_type("kubernetes:apps/v1:Deployment")
    assert group["urn"] in resource["dependencies"]


def test_more_demo_pods_than_managed_slots_only_prefer_the_group(managed_group_config: dict[str, str]) -> None:
    # A fourth demo pod takes one more of the lab's slots (6 learners + 4 demo pods).
    config = merged(managed_group_config, "gpu-platform:demo", {"replicas": 4})
    labs = json.loads(config["gpu-platform:labs"])
    labs[0]["gpuSlots"] = 10
    settings = load_settings(with_value(config, "gpu-platform:labs", labs))
    affinity = demo_affinity(settings.demo, settings.cluster_name, settings.resolved.managed_group)
    assert affinity is not None
    node_affinity = affinity["nodeAffinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in node_affinity
    (preference,) = node_affinity["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preference["preference"]["matchExpressions"][0]["key"] == EKS_NODE_GROUP_LABEL_KEY
    placed = place_demo_deployment(demo_deployment(settings.demo), demo_placement(settings))
    assert validate_core_object(placed, settings.kubernetes_version) == []


def test_without_the_managed_group_the_demo_goes_to_karpenter_without_waiting(staging_plan: Plan) -> None:
    """Staging runs no managed GPU group (warm headroom instead): no pin, no node-group dependency."""
    plan = staging_plan
    (deployment,) = plan.objects("Deployment")
    assert deployment["metadata"]["annotations"]["pulumi.com/skipAwait"] == "true"
    spec = deployment["spec"]["template"]["spec"]
    assert "affinity" not in spec
    for pool in plan.objects("NodePool"):
        # Every GPU pool takes it; the learners' CPU user pool never does.
        gpu_pool = pool["metadata"]["name"] != CpuUserPoolSettings().name
        assert pod_can_land_on(spec, pool["spec"]["template"]["metadata"]["labels"]) == gpu_pool
    (resource,) = plan.of_type("kubernetes:apps/v1:Deployment")
    node_groups = {r["urn"] for r in plan.of_type(MANAGED_NODE_GROUP)}
    assert not node_groups & set(resource["dependencies"])
