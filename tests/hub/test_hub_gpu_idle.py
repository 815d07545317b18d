"""The GPU idle reaper in each lab's hub (renderers/hub/hub_gpu_idle): chart values the chart's schema accepts, the
files it ships, its least RBAC and NetworkPolicy, and the hub pod that runs it under restricted and the guard."""

from __future__ import annotations

import datetime
import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from components.facts import jupyterhub_chart
from components.facts.constants import CLOUDWATCH_AGENT_NAMESPACE, DCGM_EXPORTER_NAME
from components.hub import gpu_idle_for, reaper_values
from components.renderers.hub import hub_gpu_idle, hub_gpu_idle_metrics, hub_namespace, hub_storage, hub_values
from components.renderers.labs.gpu_admission_policy import admission_objects, admission_policy
from components.settings import HubGpuIdleSettings, LabSettings, SettingsError, StackSettings
from gpu_reaper import classify, kube, service
from offline.plan import Plan
from tests.conftest import STACKS, shared_path
from tests.support import apiserver_model
from tests.support.k8s_validation import validate_core_object
from tests.support.kubespawner_pods import helm_merge, without_nulls
from tests.support.pod_security import restricted_problems
from tests.support.settings import settings_for

CHART_DIR = ("schemas", "jupyterhub", "4.4.0")


@cache
def _chart(name: str) -> dict[str, Any]:
    text = shared_path(*CHART_DIR, name).read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text) if name.endswith(".json") else yaml.safe_load(text)
    return loaded


@pytest.fixture(scope="module")
def settings() -> dict[str, StackSettings]:
    return {stack: settings_for(stack) for stack in STACKS}


def hubs(settings: dict[str, StackSettings]) -> list[tuple[str, StackSettings, LabSettings]]:
    return [(stack, s, lab) for stack, s in settings.items() for lab in s.labs if lab.hub is not None]


def merged(settings: StackSettings, lab: LabSettings) -> dict[str, Any]:
    assert lab.hub is not None
    ours = hub_values.chart_values(lab, hub_storage.storage_class_name(lab), settings.resolved.hub_pools(lab.hub))
    values = hub_gpu_idle.with_reaper(ours, reaper_values(settings, lab))
    result: dict[str, Any] = without_nulls(helm_merge(_chart("values.yaml"), values))
    return result


def test_both_stacks_run_the_reaper_with_values_the_chart_schema_accepts(settings: dict[str, StackSettings]) -> None:
    validator = jsonschema.Draft7Validator(_chart("values.schema.json"))
    for stack, stack_settings, lab in hubs(settings):
        values = merged(stack_settings, lab)
        assert [e.message for e in validator.iter_errors(values)] == [], stack
        service = values["hub"]["services"][hub_gpu_idle.SERVICE]
        assert service["command"][:3] == ["python3", "-m", "gpu_reaper"], stack
        role = values["hub"]["loadRoles"][hub_gpu_idle.SERVICE]
        assert role == {"scopes": list(hub_gpu_idle.SCOPES), "services": [hub_gpu_idle.SERVICE]}
        # No admin:* scope, no users/tokens/groups write: only reading users and servers, reaching and stopping them.
        assert not any(scope.startswith("admin") for scope in role["scopes"])
        # The idle culler stays for CPU notebooks and browser idleness.
        assert values["cull"]["enabled"] is True


def test_a_misspelled_service_key_is_refused_by_the_schema(settings: dict[str, StackSettings]) -> None:
    _, stack_settings, lab = hubs(settings)[0]
    values = merged(stack_settings, lab)
    values["hub"]["extraFiles"]["gpu-reaper-config"]["mountpath"] = "/x"
    assert list(jsonschema.Draft7Validator(_chart("values.schema.json")).iter_errors(values))


def test_the_hub_pod_gets_the_package_and_the_settings_it_is_tested_with(settings: dict[str, StackSettings]) -> None:
    _, stack_settings, lab = hubs(settings)[0]
    assert lab.hub is not None
    files = merged(stack_settings, lab)["hub"]["extraFiles"]
    shipped = {f["mountPath"].rsplit("/", 1)[1]: f.get("stringData") for f in files.values() if "stringData" in f}
    assert shipped == hub_gpu_idle.package_files()
    assert {"classify.py", "service.py", "__main__.py"} <= set(shipped)
    config = files["gpu-reaper-config"]["data"]
    gpu_idle = lab.hub.gpu_idle
    assert (config["idleMinutes"], config["graceMinutes"], config["thresholdPercent"]) == (
        gpu_idle.idle_minutes,
        gpu_idle.grace_minutes,
        gpu_idle.threshold_percent,
    )
    assert config["namespace"] == lab.name


def test_switched_off_per_lab_or_without_the_exporter(settings: dict[str, StackSettings]) -> None:
    assert hub_gpu_idle.chart_values(HubGpuIdleSettings(enabled=False), "lab") == {}
    assert hub_gpu_idle.reaper_objects(HubGpuIdleSettings(enabled=False), "lab") == []
    staging = settings["staging"]
    dumped = staging.model_dump(by_alias=True, exclude_none=True)
    dumped["observability"]["gpuMetrics"] = False
    blind = StackSettings.model_validate(dumped)
    lab = next(lab for lab in blind.labs if lab.hub is not None)
    assert lab.hub is not None and not gpu_idle_for(blind, lab.hub).enabled


def test_settings_refuse_a_never_used_wait_shorter_than_a_window() -> None:
    with pytest.raises(ValueError, match="neverUsedMinutes"):
        HubGpuIdleSettings.model_validate({"idleMinutes": 60, "neverUsedMinutes": 20})
    with pytest.raises((ValueError, SettingsError)):
        HubGpuIdleSettings.model_validate({"thresholdPercent": 0})


def test_least_rbac_and_exactly_the_exporter_path() -> None:
    objects = hub_gpu_idle.reaper_objects(HubGpuIdleSettings(), "lab-a")
    for obj in objects:
        assert validate_core_object(obj, "1.34") == [], obj["metadata"]["name"]
    roles = {obj["metadata"]["namespace"]: obj["rules"] for obj in objects if obj["kind"] == "Role"}
    assert roles[CLOUDWATCH_AGENT_NAMESPACE] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["amazon-cloudwatch-observability-agent-cert"],
         "verbs": ["get"]},
    ]  # fmt: skip
    assert roles["lab-a"] == [{"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]
    bindings = [obj for obj in objects if obj["kind"] == "RoleBinding"]
    assert {s["name"] for b in bindings for s in b["subjects"]} == {"hub"}
    (policy,) = [obj for obj in objects if obj["kind"] == "NetworkPolicy"]
    assert policy["spec"]["podSelector"] == {"matchLabels": {"app": "jupyterhub", "component": "hub"}}
    exporter, agent = policy["spec"]["egress"]
    assert exporter["ports"] == [{"protocol": "TCP", "port": 9400}]
    assert exporter["to"][0]["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": DCGM_EXPORTER_NAME}}
    assert exporter["to"][0]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": CLOUDWATCH_AGENT_NAMESPACE}
    }
    # The node's Pod Identity agent (CloudWatch credentials), never the instance metadata service.
    assert agent == {"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"protocol": "TCP", "port": 80}]}


def hub_pod(values: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The hub pod as the chart's deployment template builds it from these values (the parts checks read)."""
    hub = values["hub"]
    files = hub["extraFiles"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "hub", "namespace": namespace, "labels": {"app": "jupyterhub", "component": "hub"}},
        "spec": {
            "securityContext": hub["podSecurityContext"],
            "serviceAccountName": "hub",
            "containers": [
                {
                    "name": "hub",
                    "image": f"{hub['image']['name']}:{hub['image']['tag']}",
                    "securityContext": hub["containerSecurityContext"],
                    "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}},
                    "volumeMounts": [
                        {"name": "files", "mountPath": f["mountPath"], "subPath": key} for key, f in files.items()
                    ],
                }
            ],
            "volumes": [{"name": "files", "secret": {"secretName": "hub"}}],
        },
    }


def test_the_hub_pod_that_runs_the_reaper_is_valid_restricted_and_admitted_by_the_guard(
    settings: dict[str, StackSettings],
) -> None:
    for stack, stack_settings, lab in hubs(settings):
        pod = hub_pod(merged(stack_settings, lab), hub_namespace.hub_namespace(lab.name))
        assert validate_core_object(pod, stack_settings.kubernetes_version) == [], stack
        assert restricted_problems(pod["spec"]) == [], stack
        assert "hostPID" not in pod["spec"]
        # The hub runs in `<lab>-hub`: restricted, not GPU-enabled, with the hub's default requests.
        namespace = hub_namespace.namespace_manifest(lab, stack_settings.kubernetes_version)
        policy = admission_policy()
        binding = next(o for o in admission_objects() if o["spec"].get("policyName") == policy["metadata"]["name"])
        limits = [hub_namespace.hub_limit_range(lab)]
        outcome = apiserver_model.admit(
            apiserver_model.Request(pod, namespace, "CREATE", "", None, limits), policy, binding
        )
        assert (outcome.invalid, outcome.denied) == ([], []), stack
        assert restricted_problems({**pod["spec"], "hostPID": True}), "the restricted check reads hostPID"


def _any_ca() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(hours=1))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def test_the_service_starts_from_the_settings_file_the_chart_ships(
    settings: dict[str, StackSettings], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpu_reaper.service reads every key the renderer writes (and the metrics target of the stack)."""
    _, stack_settings, lab = hubs(settings)[0]
    config = merged(stack_settings, lab)["hub"]["extraFiles"]["gpu-reaper-config"]["data"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "ca.crt").write_text(_any_ca())  # the service account's CA stand-in: nothing connects
    monkeypatch.setattr(kube, "ACCOUNT", tmp_path)
    monkeypatch.setenv("JUPYTERHUB_API_URL", "http://127.0.0.1:8081/hub/api")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "token")
    reaper = service.reaper_from_config(tmp_path / "config.json")
    assert lab.hub is not None
    gpu_idle = lab.hub.gpu_idle
    assert reaper.judge.limits == classify.Thresholds(
        gpu_idle.threshold_percent, gpu_idle.idle_minutes, gpu_idle.grace_minutes, gpu_idle.never_used_minutes
    )
    assert (reaper.judge.exempt_group, reaper.judge.namespace) == (gpu_idle.exempt_group, lab.name)
    # Both stacks' hubs offload TLS at the NLB, so proxy-public has only port 443 (to the proxy's HTTP port 8000).
    assert reaper.kube is not None and reaper.hub.servers_url == "http://proxy-public:443"
    assert reaper.hub.api_url == jupyterhub_chart.HUB_API_URL  # its own hub on localhost, not the cross-namespace URL
    metrics = reaper.config["metrics"]
    assert (metrics["clusterName"], metrics["region"], metrics["lab"]) == (
        stack_settings.cluster_name,
        stack_settings.region,
        lab.name,
    )
    assert reaper.config["maxHours"] == lab.hub.max_hours


def test_plans_give_each_hub_its_metrics_role_rbac_and_policy(plans: dict[str, Plan]) -> None:
    for stack, plan in plans.items():
        settings = settings_for(stack)
        for lab in settings.labs:
            if lab.hub is None:
                continue
            (association,) = [
                a
                for a in plan.of_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
                if a["inputs"]["namespace"] == f"{lab.name}-hub" and a["inputs"]["serviceAccount"] == "hub"
            ]
            role = plan.by_urn(
                next(u for u in association["dependencies"] if plan.by_urn(u)["type"] == "aws:iam/role:Role")
            )
            (policy,) = [p for p in plan.of_type("aws:iam/rolePolicy:RolePolicy") if role["urn"] in p["dependencies"]]
            assert json.loads(policy["inputs"]["policy"]) == hub_gpu_idle_metrics.metrics_policy(), stack
            written = [
                o for o in plan.objects("NetworkPolicy") if o["metadata"]["name"] == "gpu-idle-reaper-to-exporter"
            ]
            # The policy selects the hub pod (in `<lab>-hub`); the events Role is where the notebooks are.
            assert [o["metadata"]["namespace"] for o in written] == [f"{lab.name}-hub"], stack
            roles = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in plan.objects("Role")}
            assert {(lab.name, "gpu-idle-reaper"), ("amazon-cloudwatch", f"gpu-idle-reaper-{lab.name}-hub")} <= roles
        alarms = {a["inputs"]["name"] for a in plan.of_type("aws:cloudwatch/metricAlarm:MetricAlarm")}
        assert f"{settings.cluster_name}-gpu-process-samples-missing" in alarms, stack


def test_profiles_without_per_process_samples_are_handed_to_the_reaper_as_unjudged(
    settings: dict[str, StackSettings],
) -> None:
    """The slot model decides: MPS and g6f slots give no per-process samples, so the reaper never judges them."""
    for stack, stack_settings in settings.items():
        for lab in stack_settings.labs:
            if lab.hub is None or not gpu_idle_for(stack_settings, lab.hub).enabled:
                continue
            config = reaper_values(stack_settings, lab)["hub"]["extraFiles"]["gpu-reaper-config"]["data"]
            expected = sorted(
                f"gpu-{p.name}"
                for p in stack_settings.resolved.hub_pools(lab.hub)
                if not p.slot.per_process_gpu_samples
            )
            assert config["unjudgedProfiles"] == expected, (stack, lab.name)
    vision_lab = next(lab for lab in settings["prod"].labs if lab.name == "vision-lab")
    data = reaper_values(settings["prod"], vision_lab)["hub"]["extraFiles"]["gpu-reaper-config"]["data"]
    assert data["unjudgedProfiles"] == ["gpu-l4-slice"]  # the g6f pool the hub offers beside t4-shared
