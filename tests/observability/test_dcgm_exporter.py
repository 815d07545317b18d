"""One DCGM host engine per GPU node, and the platform's dcgm-exporter (per-pod GPU use on shared GPUs)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.facts import gpu_catalog, node_allocatable, node_monitoring
from components.facts.constants import (
    CLOUDWATCH_AGENT_NAMESPACE,
    DCGM_EXPORTER_IMAGE,
    DCGM_EXPORTER_NAME,
    DCGM_HOSTENGINE_PORT,
    GPU_LABEL_KEY,
    GPU_LABEL_VALUE,
    GPU_TAINT,
)
from components.renderers.observability import dcgm_engines, observability_config
from components.renderers.observability import dcgm_exporter_manifests as exporter
from components.settings import StackSettings
from components.settings.checks.fit_placement import group_fits
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.summary import render_summary
from tests.conftest import STACKS
from tests.support.k8s_validation import tolerates, validate_core_object
from tests.support.settings import settings_for

# NVIDIA/dcgm-exporter#594 (per-process GPU metrics for time-sharing) was merged as fb5e3dc and first tagged
# in 4.5.3-4.8.2 (`git tag --contains fb5e3dc`); the charts pinned before ship 4.5.2-4.8.1 (node monitoring
# agent v1.6.6) and 4.6.0-4.8.3 (CloudWatch add-on 6.4.0, no per-pod settings).
FIRST_RELEASE_WITH_594 = (4, 5, 3, 4, 8, 2)


def engine_rows(settings: StackSettings) -> list[dcgm_engines.EngineRow]:
    # The exporter's DaemonSet as the stack renders it (components/observability.py: only with gpuMetrics).
    observability = settings.observability
    rendered = exporter.daemon_set(observability) if observability.gpu_metrics else None
    return dcgm_engines.engine_rows(observability, settings.gpu_node_group, settings.karpenter, rendered)


def container(daemon_set: dict[str, Any]) -> dict[str, Any]:
    (only,) = daemon_set["spec"]["template"]["spec"]["containers"]
    return only


def env_of(daemon_set: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(daemon_set)["env"]}


# --- one engine per GPU node ------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_every_gpu_node_runs_exactly_one_dcgm_engine(stack: str) -> None:
    rows = engine_rows(settings_for(stack))
    assert rows
    for row in rows:
        # The node monitoring agent's nv-hostengine; the exporter is its client, not a second engine.
        assert row.engines == ("dcgm-server (eks-node-monitoring-agent)",), row
        assert any(client.startswith(f"{DCGM_EXPORTER_NAME} ") for client in row.clients), row


@pytest.mark.parametrize(
    ("node_repair", "gpu_metrics", "engine"),
    [
        (True, True, "dcgm-server (eks-node-monitoring-agent)"),
        (True, False, "dcgm-server (eks-node-monitoring-agent)"),
        (False, True, f"{DCGM_EXPORTER_NAME} (platform, embedded)"),
        (False, False, None),
    ],
)
def test_one_engine_whatever_observability_runs(node_repair: bool, gpu_metrics: bool, engine: str | None) -> None:
    settings = settings_for("staging", observability={"nodeRepair": node_repair, "gpuMetrics": gpu_metrics})
    for row in engine_rows(settings):
        assert row.engines == ((engine,) if engine else ())


def test_the_add_ons_own_exporter_would_be_a_second_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """The add-on configuration as it was (chart default `dcgmExporter.enabled: true`): two engines per node."""
    values = observability_config.cloudwatch_observability_configuration()
    values.pop("dcgmExporter")
    monkeypatch.setattr(observability_config, "cloudwatch_observability_configuration", lambda: values)
    (row,) = engine_rows(settings_for("staging"))
    assert row.engines == ("dcgm-server (eks-node-monitoring-agent)", "dcgm-exporter (amazon-cloudwatch-observability)")


def test_cloudwatch_add_on_turns_its_dcgm_exporter_off_and_keeps_gpu_metrics() -> None:
    values = observability_config.cloudwatch_observability_configuration()
    assert values["dcgmExporter"] == {"enabled": False}
    kubernetes = values["agent"]["config"]["logs"]["metrics_collected"]["kubernetes"]
    assert kubernetes["accelerated_compute_metrics"] is True


def test_node_monitoring_agent_engine_covers_every_gpu_type_of_the_catalog() -> None:
    """dcgm-server's affinity lists instance types; a GPU type outside it would leave the agent without an engine."""
    assert set(gpu_catalog.GPU_INSTANCE_TYPES) <= node_monitoring.NODE_MONITORING_DCGM_INSTANCE_TYPES
    values = observability_config.node_monitoring_agent_configuration()
    assert all(tolerates(t, GPU_TAINT) for t in values["dcgmAgent"]["tolerations"])


def test_engine_model_reads_tolerations_like_the_scheduler() -> None:
    taint = dict(GPU_TAINT)
    assert dcgm_engines._tolerates({"operator": "Exists"}, taint)
    assert dcgm_engines._tolerates({**taint, "operator": "Equal"}, taint)
    assert not dcgm_engines._tolerates({**taint, "operator": "Equal", "value": "false"}, taint)
    assert not dcgm_engines._tolerates({"key": "other", "operator": "Exists"}, taint)
    assert not dcgm_engines._tolerates({"operator": "Exists", "effect": "NoExecute"}, taint)


@pytest.mark.parametrize("stack", STACKS)
def test_the_summary_reads_the_exporter_the_plan_holds(stack: str, plans: dict[str, Plan]) -> None:
    """The summary finds the exporter's DaemonSet in the plan: the same rows as the renderer's own DaemonSet."""
    settings = settings_for(stack)
    rendered = dcgm_engines.rendered_exporter(plans[stack].objects("DaemonSet"))
    assert rendered is not None
    rows = dcgm_engines.engine_rows(settings.observability, settings.gpu_node_group, settings.karpenter, rendered)
    assert rows == engine_rows(settings)


@pytest.mark.parametrize("stack", STACKS)
def test_summary_names_the_engine_of_each_gpu_node(stack: str, plans: dict[str, Plan]) -> None:
    settings = settings_for(stack)
    summary = render_summary(settings, plans[stack], stack, Path("out"), stack_forecast(settings), group_fits(settings))
    lines = summary.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("DCGM host engines per GPU node")))
    block = lines[start + 1 : lines.index("", start)]
    engines = [line.split()[0] for line in block if "engine: " in line]
    assert engines == [pool.name for pool in settings.karpenter.node_pools]
    assert all(line.endswith("engine: dcgm-server (eks-node-monitoring-agent)") for line in block if "engine: " in line)
    assert any(node_monitoring.LATCH_RECOVERY_COMMAND in line for line in block)


# --- the exporter ------------------------------------------------------------------------------------------


def test_exporter_image_is_a_release_with_per_pod_metrics_for_time_slicing() -> None:
    match = re.fullmatch(
        r"nvcr\.io/nvidia/k8s/dcgm-exporter:(\d+)\.(\d+)\.(\d+)-(\d+)\.(\d+)\.(\d+)-distroless", DCGM_EXPORTER_IMAGE
    )
    assert match, DCGM_EXPORTER_IMAGE
    assert tuple(int(part) for part in match.groups()) >= FIRST_RELEASE_WITH_594


@pytest.mark.parametrize("stack", STACKS)
def test_exporter_is_configured_for_virtual_gpus(stack: str) -> None:
    daemon_set = exporter.daemon_set(settings_for(stack).observability)
    pod = daemon_set["spec"]["template"]["spec"]
    env = env_of(daemon_set)
    # Per-process metrics need both flags (pkg/cmd/app.go @ 4.5.3-4.8.2) and the host's PIDs (/proc/PID/cgroup).
    assert env["DCGM_EXPORTER_KUBERNETES"] == "true" and env["KUBERNETES_VIRTUAL_GPUS"] == "true"
    assert pod["hostPID"] is True
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert container(daemon_set)["image"] == DCGM_EXPORTER_IMAGE
    # The pod-resources socket tells which pods hold which (shared) GPU.
    mounts = {m["name"]: m for m in container(daemon_set)["volumeMounts"]}
    assert mounts["pod-gpu-resources"] == {
        "name": "pod-gpu-resources",
        "mountPath": "/var/lib/kubelet/pod-resources",
        "readOnly": True,
    }
    assert pod["nodeSelector"] == {GPU_LABEL_KEY: GPU_LABEL_VALUE}
    assert any(tolerates(t, GPU_TAINT) for t in pod["tolerations"])


def test_exporter_uses_the_node_monitoring_agents_engine_when_node_repair_is_on() -> None:
    daemon_set = exporter.daemon_set(settings_for("staging").observability)
    args = container(daemon_set)["args"]
    assert f"--remote-hostengine-info=$(NODE_IP):{DCGM_HOSTENGINE_PORT}" in args
    assert env_of(daemon_set)["NODE_IP"] == {"fieldRef": {"fieldPath": "status.hostIP"}}
    # No engine of its own: no SYS_ADMIN either (profiling runs in the agent's engine).
    assert container(daemon_set)["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_exporter_runs_its_own_engine_without_node_repair() -> None:
    daemon_set = exporter.daemon_set(
        settings_for("staging", observability={"nodeRepair": False, "gpuMetrics": True}).observability
    )
    assert not [a for a in container(daemon_set)["args"] if a.startswith("--remote-hostengine-info")]
    assert container(daemon_set)["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["SYS_ADMIN"]}


def test_exporter_files_are_the_ones_its_config_map_and_secret_provide() -> None:
    daemon_set = exporter.daemon_set(settings_for("staging").observability)
    data = exporter.config_map()["data"]
    mounts = {m["name"]: m["mountPath"] for m in container(daemon_set)["volumeMounts"]}
    volumes = {v["name"]: v for v in daemon_set["spec"]["template"]["spec"]["volumes"]}
    for arg in container(daemon_set)["args"][:2]:
        path = Path(arg.split("=", 1)[1])
        assert str(path.parent) == mounts["config"] and path.name in data
    web = yaml.safe_load(data["web-config.yaml"])["tls_server_config"]
    tls_files = {item["path"] for item in volumes["tls"]["secret"]["items"]}
    assert {Path(web["cert_file"]).name, Path(web["key_file"]).name} == tls_files
    assert {str(Path(web["cert_file"]).parent), str(Path(web["key_file"]).parent)} == {mounts["tls"]}
    assert volumes["tls"]["secret"]["secretName"] == "amazon-cloudwatch-observability-agent-cert"
    assert volumes["config"]["configMap"]["name"] == exporter.config_map()["metadata"]["name"]
    # The fields Container Insights turns into per-pod utilisation and memory.
    fields = [line.split(",")[0] for line in data["counters.csv"].splitlines()]
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"} <= set(fields)


def test_the_agent_finds_the_exporter_as_it_found_the_add_ons() -> None:
    """Service name (the agent certificate's SAN), label (the agent's selector), namespace, https port."""
    service = exporter.service()
    assert service["metadata"]["name"] == "dcgm-exporter-service"
    assert service["metadata"]["namespace"] == CLOUDWATCH_AGENT_NAMESPACE
    assert service["metadata"]["labels"]["k8s-app"] == "dcgm-exporter-service"
    pod_labels = exporter.daemon_set(settings_for("staging").observability)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == 9400 and port["targetPort"] == "metrics"
    assert service["spec"]["internalTrafficPolicy"] == "Local"


def test_exporter_may_only_read_pods() -> None:
    (rule,) = exporter.cluster_role()["rules"]
    assert rule == {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    binding = exporter.cluster_role_binding()
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": DCGM_EXPORTER_NAME, "namespace": CLOUDWATCH_AGENT_NAMESPACE}
    ]


def test_exporter_network_policy_allows_only_scrapes_engine_and_api() -> None:
    spec = exporter.network_policy()["spec"]
    assert spec["ingress"] == [{"ports": [{"protocol": "TCP", "port": 9400}]}]
    assert sorted(rule["ports"][0]["port"] for rule in spec["egress"]) == [443, DCGM_HOSTENGINE_PORT]


@pytest.mark.parametrize("stack", STACKS)
def test_exporter_objects_validate_strictly(stack: str) -> None:
    settings = settings_for(stack)
    for obj in exporter.exporter_objects(settings.observability):
        assert validate_core_object(obj, settings.kubernetes_version) == []


def test_gpu_node_allocatable_counts_the_exporters_requests() -> None:
    requests = container(exporter.daemon_set(settings_for("staging").observability))["resources"]["requests"]
    counted = node_allocatable.gpu_node_daemonsets(gpu_metrics=True, node_repair=True, mps=False)[DCGM_EXPORTER_NAME]
    assert requests == {"cpu": f"{counted.cpu_millicores}m", "memory": f"{counted.memory_mib}Mi"}


@pytest.mark.parametrize("stack", STACKS)
def test_plans_create_the_exporter_after_both_add_ons(stack: str, plans: dict[str, Plan]) -> None:
    plan = plans[stack]
    (daemon_set,) = [
        r for r in plan.of_type("kubernetes:apps/v1:DaemonSet") if r["name"].endswith("dcgm-exporter-daemonset")
    ]
    addons = {r["inputs"]["addonName"]: r["urn"] for r in plan.of_type("aws:eks/addon:Addon")}
    assert {addons["amazon-cloudwatch-observability"], addons["eks-node-monitoring-agent"]} <= set(
        daemon_set["dependencies"]
    )
    manifests = [m for m in plan.objects("DaemonSet") if m["metadata"]["name"] == DCGM_EXPORTER_NAME]
    assert manifests == [exporter.daemon_set(settings_for(stack).observability)]
