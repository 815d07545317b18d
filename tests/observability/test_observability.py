"""GPU fleet health and utilisation: settings, add-on configuration, dashboard body, alarms, node repair, plans."""

from __future__ import annotations

import fnmatch
import json
import math
import re
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.facts.constants import (
    CLOUDWATCH_AGENT_NAMESPACE,
    CLOUDWATCH_OBSERVABILITY_ADDON,
    CLOUDWATCH_OBSERVABILITY_ADDON_VERSION,
    GPU_TAINT,
    NODE_MONITORING_AGENT_ADDON,
    NODE_MONITORING_AGENT_ADDON_VERSION,
)
from components.karpenter import controller_inputs
from components.observability import alarm_specs, dashboard, idle_fleet
from components.renderers.hub import hub_gpu_idle_metrics
from components.renderers.karpenter import karpenter_values
from components.renderers.observability import container_insights_metrics as metrics
from components.renderers.observability import gpu_alarms, gpu_dashboard
from components.renderers.observability import observability_config as config
from components.resources import node_repair
from components.settings import SettingsError, StackSettings
from components.settings.checks.fit_placement import group_fits
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.summary import render_summary
from tests.conftest import PROJECT_DIR, STACKS, registered_transforms
from tests.support.k8s_validation import tolerates, validate_core_object
from tests.support.settings import config_for, settings_for

ADDON = "aws:eks/addon:Addon"
# The metrics this product reads, as AWS documents them: "Amazon EKS and Kubernetes Container Insights with
# enhanced observability metrics" (docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/
# Container-Insights-metrics-enhanced-EKS.html), namespace ContainerInsights. Written out here, not
# imported from the module under test, so a misspelt name there cannot pass.
DOCUMENTED_GPU_METRICS = frozenset(
    {
        "cluster_node_count",
        "node_gpu_limit",
        "node_gpu_usage_total",
        "node_gpu_utilization",
        "node_gpu_memory_utilization",
        "pod_gpu_request",
        "pod_gpu_utilization",
        "pod_gpu_memory_utilization",
        # The GPU idle reaper's own metrics, which it sends itself (renderers/hub/hub_gpu_idle_metrics).
        hub_gpu_idle_metrics.RECLAIMED,
        hub_gpu_idle_metrics.BLIND_NODES,
    }
)
MNG = "eks:index:ManagedNodeGroup"
EKS_ADDON_VERSION = re.compile(r"^v\d+\.\d+\.\d+-eksbuild\.\d+$")


def settings_error(observability: dict[str, Any]) -> str:
    with pytest.raises(SettingsError) as excinfo:
        settings_for("staging", observability=observability)
    return excinfo.value.render()


# --- settings ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_staging_and_prod_enable_everything(stack: str) -> None:
    observability = settings_for(stack).observability
    assert observability.gpu_metrics and observability.node_repair and observability.alarm_subscribers


def test_everything_is_off_unless_asked_for() -> None:
    observability = settings_for("staging", observability=None).observability
    assert not observability.gpu_metrics and not observability.node_repair
    assert observability.alarm_subscribers == []


@pytest.mark.parametrize(
    ("observability", "expected"),
    [
        (
            {"gpuMetrics": True, "idleGpuHours": 0},
            "gpu-platform:observability.idleGpuHours: must be between 1 and 72 (got 0)",
        ),
        (
            {"gpuMetrics": True, "idleGpuThresholdPercent": 101},
            "observability.idleGpuThresholdPercent: must be between 1 and 100",
        ),
        (
            {"gpuMetrics": True, "stuckGpuNodeMinutes": 5},
            "observability.stuckGpuNodeMinutes: must be between 10 and 1440",
        ),
        ({"gpuMetrics": True, "alarmSubscribers": ["oncall"]}, "alarmSubscribers[0]: 'oncall' must be an e-mail"),
        (
            {"gpuMetrics": True, "alarmSubscribers": ["arn:aws:sns:us-west-1:123456789012:x"]},
            "must be an e-mail address or an SQS queue / Lambda function ARN",
        ),
        ({"alarmSubscribers": ["a@example.com"]}, "alarmSubscribers: ignored while observability.gpuMetrics is false"),
        ({"gpuMetrics": True, "alarmSubscribers": ["a@example.com"] * 2}, "each subscriber once"),
        ({"gpuMetric": True}, "gpu-platform:observability.gpuMetric: unknown key"),
    ],
)
def test_bad_observability_settings_name_the_key(observability: dict[str, Any], expected: str) -> None:
    assert expected in settings_error(observability)


# --- add-on configuration values ----------------------------------------------------------------------


def _daemonset_with(tolerations: list[dict[str, Any]]) -> dict[str, Any]:
    labels = {"app": "probe"}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "probe", "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"tolerations": tolerations, "containers": [{"name": "c", "image": "public.ecr.aws/x/y:1"}]},
            },
        },
    }


def test_node_monitoring_agent_and_its_dcgm_server_run_on_gpu_nodes() -> None:
    values = config.node_monitoring_agent_configuration()
    assert set(values) <= {"global", "nodeAgent", "dcgmAgent", "extraObjects"}, "keys of the add-on schema"
    for component in ("nodeAgent", "dcgmAgent"):
        tolerations = values[component]["tolerations"]
        assert any(tolerates(t, GPU_TAINT) for t in tolerations), f"{component} must tolerate the GPU taint"
        # The values become the DaemonSets' tolerations: they must be valid Kubernetes tolerations.
        assert validate_core_object(_daemonset_with(tolerations), "1.35") == []
    assert values["dcgmAgent"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]


def test_tolerations_that_miss_the_gpu_taint_are_caught() -> None:
    wrong = {"key": "nvidia.com/gpu", "operator": "Equal", "value": "false", "effect": "NoSchedule"}
    assert not tolerates(wrong, GPU_TAINT)


def test_cloudwatch_add_on_collects_enhanced_gpu_metrics_on_gpu_nodes() -> None:
    values = config.cloudwatch_observability_configuration()
    kubernetes = values["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
    assert kubernetes == {
        "enhanced_container_insights": True,
        "accelerated_compute_metrics": True,
        "metrics_collection_interval": metrics.COLLECTION_INTERVAL_SECONDS,
    }
    # Root tolerations reach the dcgm-exporter DaemonSet (no component override is set).
    assert "tolerations" not in values.get("dcgmExporter", {})
    assert any(tolerates(t, GPU_TAINT) for t in values["tolerations"])
    assert validate_core_object(_daemonset_with(values["tolerations"]), "1.35") == []
    assert values["containerLogs"] == {"enabled": False}


def test_add_on_versions_are_pinned_eks_builds() -> None:
    for version in (NODE_MONITORING_AGENT_ADDON_VERSION, CLOUDWATCH_OBSERVABILITY_ADDON_VERSION):
        assert EKS_ADDON_VERSION.match(version), version
    assert not EKS_ADDON_VERSION.match("latest")


def test_agent_trust_names_the_add_on_service_account_only() -> None:
    (statement,) = config.cloudwatch_agent_trust_policy("c1")["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Condition"]["StringEquals"] == {
        "aws:RequestTag/eks-cluster-name": "c1",
        "aws:RequestTag/kubernetes-namespace": "amazon-cloudwatch",
        "aws:RequestTag/kubernetes-service-account": "cloudwatch-agent",
    }


def test_key_policy_gives_cloudwatch_the_documented_statement_without_conditions() -> None:
    # AWS Knowledge Center cloudwatch-configure-alarm-sns: `Allow_CloudWatch_for_CMK` has no Condition; a
    # source-account condition is not documented for SNS's KMS calls on CloudWatch's behalf.
    statements = {s["Sid"]: s for s in config.alarm_topic_key_policy("210987654321", "aws")["Statement"]}
    assert statements["AllowCloudWatchForCMK"] == {
        "Sid": "AllowCloudWatchForCMK",
        "Effect": "Allow",
        "Principal": {"Service": "cloudwatch.amazonaws.com"},
        "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
        "Resource": "*",
    }
    assert statements["AllowAccountToAdministerKey"]["Principal"] == {"AWS": "arn:aws:iam::210987654321:root"}


def test_topic_policy_admits_only_this_clusters_alarms() -> None:
    topic = "arn:aws:sns:us-west-1:210987654321:c1-gpu-alarms"
    (statement,) = config.alarm_topic_policy(topic, "210987654321", "aws", "us-west-1", "c1")["Statement"]
    assert (statement["Principal"], statement["Action"], statement["Resource"]) == (
        {"Service": "cloudwatch.amazonaws.com"},
        "sns:Publish",
        topic,
    )
    assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": "210987654321"}
    pattern = statement["Condition"]["ArnLike"]["aws:SourceArn"]
    for alarm in ("c1-idle-gpus", "c1-stuck-gpu-node"):
        assert fnmatch.fnmatchcase(f"arn:aws:cloudwatch:us-west-1:210987654321:alarm:{alarm}", pattern)
    for foreign in ("arn:aws:cloudwatch:us-west-1:210987654321:alarm:other-alarm",
                    "arn:aws:cloudwatch:us-east-1:210987654321:alarm:c1-idle-gpus",
                    "arn:aws:cloudwatch:us-west-1:111111111111:alarm:c1-idle-gpus"):  # fmt: skip
        assert not fnmatch.fnmatchcase(foreign, pattern)


@pytest.mark.parametrize(("endpoint", "protocol"), [("a@example.com", "email"), ("arn:aws:sqs:us-west-2:123456789012:q", "sqs"), ("arn:aws:lambda:us-west-2:123456789012:function:f", "lambda")])  # fmt: skip
def test_subscription_protocol(endpoint: str, protocol: str) -> None:
    assert config.subscription_protocol(endpoint) == protocol


# --- alarms ------------------------------------------------------------------------------------------


def _evaluate(expression: str, values: dict[str, float]) -> float:
    """CloudWatch metric math for the subset the alarms use: + - / > <, AND, IF(c, a, b), FILL(x, 0) on present data."""
    python = re.sub(r"FILL\((\w+), 0\)", r"\1", expression).replace(" AND ", " and ").replace("IF(", "_if(")
    assert re.fullmatch(r"[\w\s.,+\-/*()<>]+", python), python
    namespace = {**values, "_if": lambda condition, yes, no: yes if condition else no}
    return float(eval(python, {"__builtins__": {}}, namespace))  # arithmetic over our own query ids only


def _returned_expression(spec: gpu_alarms.AlarmSpec) -> str:
    (expression,) = [q.expression for q in spec.queries if q.return_data]
    assert expression is not None
    return expression


def _stuck_alarm(settings: StackSettings) -> gpu_alarms.AlarmSpec:
    return gpu_alarms.stuck_gpu_node_alarm(settings.cluster_name, settings.observability, settings.system_nodes)


def _idle_alarm(settings: StackSettings) -> gpu_alarms.AlarmSpec:
    return gpu_alarms.idle_gpu_alarm(settings.cluster_name, settings.observability, idle_fleet(settings))


def test_stuck_gpu_node_alarm_counts_nodes_without_gpus() -> None:
    settings = settings_for("staging")  # systemNodes: desiredSize 2, maxSize 3
    spec = _stuck_alarm(settings)
    expression = _returned_expression(spec)
    samples = gpu_alarms.STUCK_PERIOD_SECONDS // metrics.COLLECTION_INTERVAL_SECONDS
    healthy = _evaluate(expression, {"nodes": 2 + 2, "gpuevents": 2 * samples})  # 2 system + 2 GPU nodes reporting
    one_stuck = _evaluate(expression, {"nodes": 2 + 2, "gpuevents": 1 * samples})  # 1 of the 2 GPU nodes silent
    assert healthy < spec.threshold < one_stuck
    assert spec.comparison_operator == "GreaterThanThreshold"
    assert (
        spec.evaluation_periods * gpu_alarms.STUCK_PERIOD_SECONDS >= settings.observability.stuck_gpu_node_minutes * 60
    )
    assert spec.evaluation_periods == math.ceil(30 * 60 / 300)


@pytest.mark.parametrize(("stack", "system_nodes"), [("staging", 2), ("prod", 3)])
def test_one_stuck_gpu_node_is_seen_at_the_system_groups_desired_size(stack: str, system_nodes: int) -> None:
    """No blind spot in steady state: the system group runs at desiredSize (nothing resizes it)."""
    spec = _stuck_alarm(settings_for(stack))
    samples = gpu_alarms.STUCK_PERIOD_SECONDS // metrics.COLLECTION_INTERVAL_SECONDS
    stuck = {"nodes": system_nodes + 1, "gpuevents": 0.0}
    assert _evaluate(_returned_expression(spec), stuck) > spec.threshold
    healthy = {"nodes": system_nodes + 1, "gpuevents": 1.0 * samples}
    assert _evaluate(_returned_expression(spec), healthy) < spec.threshold


def test_a_system_group_surge_longer_than_the_window_is_the_documented_false_alarm() -> None:
    # docs/gpu-health.md: a rolling update surges the system group above desiredSize; the alarm may fire, then clears.
    spec = _stuck_alarm(settings_for("staging"))
    samples = gpu_alarms.STUCK_PERIOD_SECONDS // metrics.COLLECTION_INTERVAL_SECONDS
    surge = {"nodes": 3 + 2, "gpuevents": 2.0 * samples}  # 3 system nodes during the update, 2 healthy GPU nodes
    assert _evaluate(_returned_expression(spec), surge) > spec.threshold


def _idle(spec: gpu_alarms.AlarmSpec, gpu_nodes: float, busiest: float) -> bool:
    samples = gpu_alarms.IDLE_PERIOD_SECONDS // metrics.COLLECTION_INTERVAL_SECONDS
    value = _evaluate(_returned_expression(spec), {"gpuevents": gpu_nodes * samples, "busiest": busiest})
    return value > spec.threshold


def test_intended_idle_nodes_are_the_warm_headroom_and_the_demo() -> None:
    # staging: g4-nodepool warmGpuSlots 3 on g4dn.xlarge (1 GPU x 3 replicas) = 1 node; demo 3 pods x 1 slot = 1 node.
    staging = settings_for("staging")
    assert gpu_alarms.intended_idle_gpu_nodes(idle_fleet(staging)) == 2
    no_demo = settings_for("staging", demo={"enabled": False})
    assert gpu_alarms.intended_idle_gpu_nodes(idle_fleet(no_demo)) == 1
    assert gpu_alarms.intended_idle_gpu_nodes(idle_fleet(settings_for("prod"))) == 0  # no warm slots, no demo


@pytest.mark.parametrize(("desired", "intended"), [(1, 2), (2, 3)])
def test_the_managed_groups_floor_is_intended_idle_and_holds_the_demo_first(desired: int, intended: int) -> None:
    # Managed group of g4dn.xlarge (3 slots each) at desiredSize nodes: the 3 demo pods fit on its first
    # node, so no demo node on Karpenter; + 1 warm-headroom node. desired 1 -> 1 + 1, desired 2 -> 2 + 1.
    group = {"enabled": True, "instanceTypes": ["g4dn.xlarge"], "minSize": 1, "desiredSize": desired, "maxSize": 2}
    settings = settings_for("staging", gpuNodeGroup=group)
    assert gpu_alarms.intended_idle_gpu_nodes(idle_fleet(settings)) == intended
    assert not _idle(_idle_alarm(settings), gpu_nodes=intended, busiest=0.0)


def test_idle_gpu_alarm_ignores_intended_idle_capacity() -> None:
    settings = settings_for("staging")
    spec = _idle_alarm(settings)
    threshold = settings.observability.idle_gpu_threshold_percent
    assert not _idle(spec, gpu_nodes=2, busiest=0), "the warm node and the demo's node are idle on purpose"
    assert not _idle(spec, gpu_nodes=2.3, busiest=0), "a node for a few minutes of the hour is no forgotten workload"
    assert _idle(spec, gpu_nodes=3, busiest=threshold - 1), "a third GPU node idle all hour"
    assert not _idle(spec, gpu_nodes=3, busiest=threshold + 1), "a busy GPU"


def test_idle_gpu_alarm_uses_threshold_and_hours() -> None:
    settings = settings_for("prod", observability={"gpuMetrics": True, "idleGpuThresholdPercent": 7, "idleGpuHours": 3})
    spec = _idle_alarm(settings)
    assert (spec.evaluation_periods, spec.comparison_operator) == (3, "GreaterThanThreshold")
    assert _idle(spec, gpu_nodes=1, busiest=6.9) and not _idle(spec, gpu_nodes=1, busiest=7)
    metrics = {q.id: (q.metric_name, q.stat, q.period) for q in spec.queries if q.metric_name}
    assert metrics == {
        "gpuevents": ("node_gpu_limit", "SampleCount", 3600),
        "busiest": ("node_gpu_utilization", "Maximum", 3600),
    }
    assert spec.treat_missing_data == "notBreaching", "no GPU nodes must not alarm"
    assert "warm slots" in spec.description and "gpuNodeGroup" not in spec.description


def test_alarms_use_only_documented_metrics() -> None:
    names = {q.metric_name for spec in alarm_specs(settings_for("prod")) for q in spec.queries if q.metric_name}
    assert names and names <= DOCUMENTED_GPU_METRICS


# --- dashboard -----------------------------------------------------------------------------------------

WIDGET_KEYS = {"type", "x", "y", "width", "height", "properties"}


def _dashboard_problems(body: dict[str, Any], region: str) -> list[str]:
    """The structure CloudWatch's PutDashboard accepts, plus: every metric is a documented one."""
    problems = []
    for index, widget in enumerate(body["widgets"]):
        if set(widget) != WIDGET_KEYS:
            problems.append(f"widget {index}: keys {sorted(widget)}")
            continue
        if widget["x"] + widget["width"] > gpu_dashboard.GRID_WIDTH or min(widget["x"], widget["y"]) < 0:
            problems.append(f"widget {index}: outside the 24-column grid")
        properties = widget["properties"]
        if widget["type"] == "text":
            problems += [] if properties.get("markdown") else [f"widget {index}: text without markdown"]
            continue
        if widget["type"] != "metric" or properties.get("region") != region:
            problems.append(f"widget {index}: type {widget['type']}, region {properties.get('region')}")
            continue
        for row in properties.get("metrics") or [None]:
            if not (isinstance(row, list) and row and isinstance(row[-1], dict) and "expression" in row[-1]):
                problems.append(f"widget {index}: metrics row {row!r} is not an expression row")
                continue
            used = set(re.findall(r'MetricName="(\w+)"', row[-1]["expression"]))
            used |= set(re.findall(r"\b(?:SUM|COUNT|AVG|MAX|MIN)\((\w+)\)", row[-1]["expression"]))
            if not used or not used <= DOCUMENTED_GPU_METRICS:
                problems.append(f"widget {index}: metrics {sorted(used)} not all documented")
    return problems


@pytest.mark.parametrize("stack", STACKS)
def test_dashboard_body_has_the_structure_cloudwatch_accepts(stack: str) -> None:
    settings = settings_for(stack)
    body = json.loads(json.dumps(dashboard(settings)))
    assert _dashboard_problems(body, settings.region) == []
    titles = [w["properties"].get("title", "") for w in body["widgets"]]
    assert any("per node" in t and "memory" not in t for t in titles) and any("memory" in t for t in titles)
    assert any("per lab" in t for t in titles) and any("GPU nodes" in t for t in titles)
    (intro,) = [w["properties"]["markdown"] for w in body["widgets"] if w["type"] == "text"]
    assert "dcgm-exporter/pull/594" in intro and "per pod" in intro and "request" in intro
    assert "Follow-up:** GPU nodes per pool need Karpenter's own metrics" in intro


@pytest.mark.parametrize("stack", STACKS)
def test_dashboard_searches_select_exactly_the_per_node_series(stack: str) -> None:
    # node_gpu_* also exist per GPU device ({..., InstanceType, GpuDevice}); a SEARCH term `NodeName` matched both.
    body = dashboard(settings_for(stack))
    searches = [
        row[-1]["expression"]
        for widget in body["widgets"]
        for row in widget["properties"].get("metrics", [])
        if row[-1]["expression"].startswith("SEARCH(")
        and hub_gpu_idle_metrics.METRICS_NAMESPACE not in row[-1]["expression"]
    ]
    assert len(searches) == 2
    for search in searches:
        assert search.startswith("SEARCH('{ContainerInsights,ClusterName,InstanceId,NodeName} MetricName=")
        assert "GpuDevice" not in search and " NodeName'" not in search


def test_dashboard_shows_gpu_use_per_lab_and_per_pod_of_each_lab() -> None:
    settings = settings_for(
        "staging",
        labs=[{"name": "learning-lab", "gpuSlots": 3, "members": []}, {"name": "lab-b", "gpuSlots": 3, "members": []}],
    )
    widgets = {w["properties"].get("title"): w["properties"] for w in dashboard(settings)["widgets"]}
    (per_lab,) = widgets["GPU utilisation per lab (namespace, %)"]["metrics"]
    assert "AVG(pod_gpu_utilization)" in per_lab[0]["expression"] and "GROUP BY Namespace" in per_lab[0]["expression"]
    # One per-pod widget per lab namespace (and the demo's), each filtered to that namespace.
    for namespace in ("learning-lab", "lab-b"):
        rows = widgets[f"GPU use per pod in lab {namespace} (%)"]["metrics"]
        assert [
            ("pod_gpu_utilization" in r[0]["expression"], "pod_gpu_memory_utilization" in r[0]["expression"])
            for r in rows
        ] == [
            (True, False),
            (False, True),
        ]
        assert all(
            f"Namespace = '{namespace}'" in r[0]["expression"] and "GROUP BY PodName" in r[0]["expression"]
            for r in rows
        )
    (idle,) = widgets["Least busy GPU pods (idle first, %)"]["metrics"]
    assert idle[0]["expression"].endswith("GROUP BY Namespace, PodName ORDER BY MAX() ASC LIMIT 20")


def test_dashboard_checks_catch_a_broken_body() -> None:
    settings = settings_for("staging")
    body = dashboard(settings)
    broken = json.loads(json.dumps(body))
    broken["widgets"][1]["properties"]["region"] = "eu-west-1"
    broken["widgets"][2]["properties"]["metrics"] = [
        [{"expression": "SEARCH('MetricName=\"node_gpu_fun\"', 'Average', 60)"}]
    ]
    broken["widgets"][3]["width"] = 30
    problems = _dashboard_problems(broken, settings.region)
    assert len(problems) == 3, problems


def test_dashboard_draws_each_pools_slot_ceiling() -> None:
    # staging: g4-nodepool gpuLimit 8 at 3 replicas; its managed GPU group is disabled (warm headroom instead).
    assert settings_for("staging").resolved.slot_ceilings == {"g4-nodepool": 8 * 3}
    # with the managed group on: 1 x g4dn.xlarge (1 GPU) at maxSize 1, 3 replicas.
    with_group = settings_for("staging", gpuNodeGroup={"enabled": True, "minSize": 1, "desiredSize": 1, "maxSize": 1})
    assert with_group.resolved.slot_ceilings == {
        "g4-nodepool": 24,
        "managed-gpu-group": 3,
    }


# --- Karpenter node repair ----------------------------------------------------------------------------


@pytest.mark.parametrize("node_repair", [True, False])
def test_karpenter_node_repair_gate_follows_settings(node_repair: bool) -> None:
    settings = settings_for("staging", observability={"nodeRepair": node_repair})
    gates = karpenter_values.helm_values(
        controller_inputs(settings), cluster_endpoint="https://x", interruption_queue="q"
    )["settings"]["featureGates"]
    assert gates.get("nodeRepair", False) is node_repair
    assert all(isinstance(value, bool) for value in gates.values())


# --- EKS node auto repair (transform on the pulumi-eks managed node groups) -------------------------------


def _transform_args(type_: str) -> pulumi.ResourceTransformArgs:
    return pulumi.ResourceTransformArgs(
        custom=True, type_=type_, name="n", props={"clusterName": "c"}, opts=pulumi.ResourceOptions()
    )


def test_node_repair_transform_sets_node_repair_config_on_the_node_group_only() -> None:
    result = node_repair.enable_node_repair(_transform_args("aws:eks/nodeGroup:NodeGroup"))
    assert result is not None and result.props == {
        "clusterName": "c",
        # Repair stops when more than one node of the group is unhealthy at once (a latched monitor, #266).
        "nodeRepairConfig": {"enabled": True, "maxUnhealthyNodeThresholdCount": 1, "maxParallelNodesRepairedCount": 1},
    }
    assert node_repair.enable_node_repair(_transform_args("aws:ec2/launchTemplate:LaunchTemplate")) is None


@pytest.mark.usefixtures("reset_runtime")
@pytest.mark.parametrize("node_repair", [True, False])
def test_both_managed_node_groups_carry_the_repair_transform(node_repair: bool) -> None:
    # Staging's managed GPU group is off (warm headroom instead): turn it on so both groups exist.
    values = config_for(
        "staging",
        observability={"nodeRepair": node_repair},
        gpuNodeGroup={"enabled": True, "minSize": 1, "desiredSize": 1, "maxSize": 1},
    )
    transforms = registered_transforms(values, MNG)
    assert transforms == {"cluster-system": int(node_repair), "gpu-nodes-mng": int(node_repair)}


# --- the plans -------------------------------------------------------------------------------------------


def _dependency_types(plan: Plan, resource: dict[str, Any]) -> set[str]:
    return {plan.by_urn(urn)["type"] for urn in resource["dependencies"]}


@pytest.mark.parametrize("stack", STACKS)
def test_plans_install_both_add_ons_after_the_system_nodes(stack: str, plans: dict[str, Plan]) -> None:
    plan = plans[stack]
    addons = {r["inputs"]["addonName"]: r for r in plan.of_type(ADDON)}
    monitoring, cloudwatch = addons[NODE_MONITORING_AGENT_ADDON], addons[CLOUDWATCH_OBSERVABILITY_ADDON]
    assert monitoring["inputs"]["addonVersion"] == "v1.6.6-eksbuild.1"
    assert cloudwatch["inputs"]["addonVersion"] == "v6.4.0-eksbuild.1"
    assert json.loads(monitoring["inputs"]["configurationValues"]) == config.node_monitoring_agent_configuration()
    assert json.loads(cloudwatch["inputs"]["configurationValues"]) == config.cloudwatch_observability_configuration()
    assert MNG in _dependency_types(plan, monitoring)
    assert {MNG, "aws:eks/podIdentityAssociation:PodIdentityAssociation", ADDON} <= _dependency_types(plan, cloudwatch)


@pytest.mark.parametrize("stack", STACKS)
def test_plans_give_the_agent_its_identity_through_pod_identity(stack: str, plans: dict[str, Plan]) -> None:
    plan = plans[stack]
    (association,) = [
        r for r in plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
        if r["inputs"]["namespace"] == CLOUDWATCH_AGENT_NAMESPACE
    ]  # fmt: skip
    assert association["inputs"]["serviceAccount"] == "cloudwatch-agent"  # the add-on chart's agent
    role = plan.one("aws:iam/role:Role", "observability-cloudwatch-agent")
    assert role["urn"] in association["dependencies"]
    attachment = plan.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "observability-cloudwatch-agent")
    assert attachment["inputs"]["policyArn"] == "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"


@pytest.mark.parametrize("stack", STACKS)
def test_plans_contain_dashboard_alarms_and_encrypted_topic(stack: str, plans: dict[str, Plan]) -> None:
    plan, settings = plans[stack], settings_for(stack)
    (dashboard,) = plan.of_type("aws:cloudwatch/dashboard:Dashboard")
    assert _dashboard_problems(json.loads(dashboard["inputs"]["dashboardBody"]), settings.region) == []
    (topic,) = plan.of_type("aws:sns/topic:Topic")
    key = plan.by_urn(next(u for u in topic["dependencies"] if plan.by_urn(u)["type"] == "aws:kms/key:Key"))
    assert topic["inputs"]["kmsMasterKeyId"] and key["inputs"]["enableKeyRotation"] is True
    alarms = plan.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")
    reaper_alarm = hub_gpu_idle_metrics.blind_nodes_alarm(settings.cluster_name)["name"]
    assert sorted(a["inputs"]["name"] for a in alarms) == sorted(
        [*(s.name for s in alarm_specs(settings)), reaper_alarm]
    )
    assert all(topic["urn"] in a["dependencies"] and a["inputs"]["alarmActions"] for a in alarms)
    (topic_policy,) = plan.of_type("aws:sns/topicPolicy:TopicPolicy")
    assert topic["urn"] in topic_policy["dependencies"]
    (statement,) = json.loads(topic_policy["inputs"]["policy"])["Statement"]
    assert statement["Principal"] == {"Service": "cloudwatch.amazonaws.com"} and "Condition" in statement
    assert all(topic_policy["urn"] in a["dependencies"] for a in alarms), "alarms wait for CloudWatch's permission"
    subscriptions = plan.of_type("aws:sns/topicSubscription:TopicSubscription")
    assert sorted(s["inputs"]["endpoint"] for s in subscriptions) == sorted(settings.observability.alarm_subscribers)


@pytest.mark.parametrize("stack", STACKS)
def test_plans_enable_karpenter_node_repair(stack: str, plans: dict[str, Plan]) -> None:
    (release,) = [
        h for h in plans[stack].helm if "karpenter" in str(h.get("chart", "")) and "crd" not in str(h.get("chart", ""))
    ]
    assert release["values"]["settings"]["featureGates"]["nodeRepair"] is True


# --- node auto repair in the synth summary (the transform's effect is not in resources.json) --------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({}, {"systemNodes": "enabled"}),
        ({"observability": {"nodeRepair": False}}, {"systemNodes": "off"}),
        (
            {"gpuNodeGroup": {"enabled": True, "minSize": 1, "desiredSize": 1, "maxSize": 1}},
            {"systemNodes": "enabled", "gpuNodeGroup": "enabled"},
        ),
    ],
)
def test_summary_shows_node_auto_repair_per_managed_group(
    staging_plan: Plan, overrides: dict[str, Any], expected: dict[str, str]
) -> None:
    settings = settings_for("staging", **overrides)
    summary = render_summary(
        settings, staging_plan, "staging", Path("out"), stack_forecast(settings), group_fits(settings)
    )
    lines = summary.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("EKS node auto repair (nodeRepairConfig"))
    block = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        group, state = line.split()
        block[group] = state
    assert block == expected


def test_cloudwatch_namespace_is_spelled_once_in_the_product() -> None:
    spelled = [
        str(path.relative_to(PROJECT_DIR))
        for directory in ("components", "policy", "offline")
        for path in sorted((PROJECT_DIR / directory).rglob("*.py"))
        for _ in re.finditer(r"[\"']amazon-cloudwatch[\"']", path.read_text())
    ]
    assert spelled == ["components/facts/constants.py"]
