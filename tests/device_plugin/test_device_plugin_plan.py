"""The device plugin in the synthesized plans: objects written, valid, wired and placed on the real GPU nodes."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.facts.constants import DCGM_EXPORTER_NAME, GPU_LABEL_KEY, GPU_RESOURCE, GPU_TAINT, TIMETABLE_NAMESPACE
from components.renderers.device_plugin.device_plugin_config import parse_config
from components.renderers.device_plugin.device_plugin_manifests import CHECKSUM_ANNOTATION, PLUGIN_APP
from components.renderers.labs.lab_manifests import LAB_LABEL_KEY
from components.renderers.manifest_helpers import config_checksum
from components.renderers.observability import dcgm_exporter_manifests
from components.settings import StackSettings
from offline.plan import Plan
from tests.conftest import STACKS
from tests.support.k8s_validation import (
    deny_all_problems,
    pod_can_land_on,
    selector_problems,
    selects,
    skip_reasons,
    tolerates,
    validate_core_object,
)
from tests.support.pins import PINNED_PLUGIN_IMAGE
from tests.support.settings import settings_for

PLUGIN_TYPE = "gpu-platform:gpu:DevicePlugin"
DEMO_TYPE = "gpu-platform:demo:DemoWorkload"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
MANAGED_NODE_GROUP = "eks:index:ManagedNodeGroup"
EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@pytest.fixture(scope="module")
def settings() -> dict[str, StackSettings]:
    return {stack: settings_for(stack) for stack in STACKS}


def plugin_daemon_sets(plan: Plan) -> list[dict[str, Any]]:
    return [
        ds
        for ds in plan.objects("DaemonSet")
        if ds["spec"]["selector"]["matchLabels"].get("app.kubernetes.io/name") == PLUGIN_APP
    ]


def config_of(plan: Plan, daemon_set: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(config text, parsed config) of the ConfigMap the DaemonSet mounts."""
    spec = daemon_set["spec"]["template"]["spec"]
    (name,) = [v["configMap"]["name"] for v in spec["volumes"] if "configMap" in v]
    (config_map,) = [cm for cm in plan.objects("ConfigMap") if cm["metadata"]["name"] == name]
    (text,) = config_map["data"].values()
    return text, yaml.safe_load(text)


def excludes_gpus(pool: dict[str, Any]) -> bool:
    """A NodePool that can never launch a GPU instance (the learners' CPU user pool)."""
    requirements = pool["spec"]["template"]["spec"]["requirements"]
    return any(
        r["key"] == "karpenter.k8s.aws/instance-gpu-count" and r["operator"] == "DoesNotExist" for r in requirements
    )


def gpu_node_pools(plan: Plan) -> list[dict[str, Any]]:
    return [pool for pool in plan.objects("NodePool") if not excludes_gpus(pool)]


def gpu_node_sources(plan: Plan) -> dict[str, tuple[dict[str, str], list[dict[str, str]]]]:
    """Every source of GPU nodes in the plan -> (node labels, node taints in Kubernetes spelling)."""
    sources = {}
    for group in plan.of_type(MANAGED_NODE_GROUP):
        labels = group["inputs"].get("labels") or {}
        if GPU_LABEL_KEY in labels:
            taints = [{**t, "effect": EKS_EFFECTS[t["effect"]]} for t in group["inputs"].get("taints") or []]
            sources[f"managed node group {group['name']}"] = (labels, taints)
    for pool in gpu_node_pools(plan):
        template = pool["spec"]["template"]
        sources[f"NodePool {pool['metadata']['name']}"] = (
            template.get("metadata", {}).get("labels", {}),
            template["spec"].get("taints", []),
        )
    return sources


def system_node_labels(plan: Plan) -> list[dict[str, str]]:
    return [
        g["inputs"].get("labels") or {}
        for g in plan.of_type(MANAGED_NODE_GROUP)
        if GPU_LABEL_KEY not in (g["inputs"].get("labels") or {})
    ]


def test_staging_writes_the_time_slicing_config_and_its_daemon_set(staging_plan: Plan) -> None:
    (daemon_set,) = plugin_daemon_sets(staging_plan)
    text, data = config_of(staging_plan, daemon_set)
    assert data["sharing"]["timeSlicing"]["resources"] == [{"name": GPU_RESOURCE, "replicas": 3}]
    assert parse_config(text).strategy == "time-slicing"
    template = daemon_set["spec"]["template"]
    assert template["metadata"]["annotations"][CHECKSUM_ANNOTATION] == config_checksum(text)
    assert template["spec"]["containers"][0]["image"] == PINNED_PLUGIN_IMAGE


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_plan_objects_validate_strictly(stack: str, plans: dict[str, Plan], settings: dict[str, StackSettings]) -> None:
    plan = plans[stack]
    # The device plugin's ConfigMaps (kube-system); the GPU metrics exporter's is tested in test_dcgm_exporter.py.
    config_maps = [cm for cm in plan.objects("ConfigMap") if cm["metadata"]["namespace"] == "kube-system"]
    objects = [*plugin_daemon_sets(plan), *config_maps]
    assert len(objects) == 2 * len(settings[stack].sharing_profiles)
    for obj in objects:
        assert validate_core_object(obj, settings[stack].kubernetes_version) == []
    for daemon_set in plugin_daemon_sets(plan):
        assert selector_problems(daemon_set) == []


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_each_daemon_set_depends_on_its_config_map(stack: str, plans: dict[str, Plan]) -> None:
    plan = plans[stack]
    (component,) = plan.of_type(PLUGIN_TYPE)
    config_maps = {r["inputs"]["metadata"]["name"]: r for r in plan.of_type("kubernetes:core/v1:ConfigMap")}
    daemon_sets = [r for r in plan.of_type("kubernetes:apps/v1:DaemonSet") if r["parent"] == component["urn"]]
    assert len(daemon_sets) == len(plugin_daemon_sets(plan))
    for resource in daemon_sets:
        volumes = resource["inputs"]["spec"]["template"]["spec"]["volumes"]
        (name,) = [v["configMap"]["name"] for v in volumes if "configMap" in v]
        assert config_maps[name]["urn"] in resource["dependencies"]
        assert config_maps[name]["parent"] == component["urn"]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_every_gpu_node_runs_exactly_one_plugin_and_system_nodes_none(stack: str, plans: dict[str, Plan]) -> None:
    """Placement against the labels and taints the plan really puts on nodes (node group and NodePools)."""
    plan = plans[stack]
    daemon_sets = plugin_daemon_sets(plan)
    sources = gpu_node_sources(plan)
    managed_group = settings_for(stack).gpu_node_group.enabled
    assert any(s.startswith("managed") for s in sources) == managed_group
    assert any(s.startswith("NodePool") for s in sources)
    for source, (labels, taints) in sources.items():
        landing = [ds for ds in daemon_sets if pod_can_land_on(ds["spec"]["template"]["spec"], labels)]
        assert len(landing) == 1, f"{source}: {len(landing)} device plugins would run there"
        tolerations = landing[0]["spec"]["template"]["spec"]["tolerations"]
        assert GPU_TAINT in taints, f"{source} is not tainted for GPU work"
        assert all(
            any(tolerates(t, taint) for t in tolerations) for taint in taints if taint["effect"] != "PreferNoSchedule"
        )
    system = system_node_labels(plan)
    assert system
    # Nor on the CPU user pool's nodes.
    system += [p["spec"]["template"]["metadata"]["labels"] for p in plan.objects("NodePool") if excludes_gpus(p)]
    for labels in system:
        assert not any(pod_can_land_on(ds["spec"]["template"]["spec"], labels) for ds in daemon_sets)


def overlay_gpu_counts(plan: Plan, pool: str) -> dict[int, int]:
    """NodeOverlays of one NodePool: physical GPUs per instance -> advertised nvidia.com/gpu."""
    counts = {}
    for overlay in plan.objects("NodeOverlay"):
        requirements = {r["key"]: r for r in overlay["spec"].get("requirements", [])}
        if requirements.get("karpenter.sh/nodepool", {}).get("values") != [pool]:
            continue
        (gpus,) = requirements["karpenter.k8s.aws/instance-gpu-count"]["values"]
        counts[int(gpus)] = int(overlay["spec"]["capacity"][GPU_RESOURCE])
    return counts


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_plugin_makes_the_node_overlay_capacity_true(stack: str, plans: dict[str, Plan]) -> None:
    """Karpenter is told physical GPUs x replicas; the plugin on that pool's nodes shares each GPU that many ways."""
    plan = plans[stack]
    daemon_sets = plugin_daemon_sets(plan)
    for pool in gpu_node_pools(plan):
        name = pool["metadata"]["name"]
        labels = pool["spec"]["template"]["metadata"]["labels"]
        (daemon_set,) = [ds for ds in daemon_sets if pod_can_land_on(ds["spec"]["template"]["spec"], labels)]
        _, config = config_of(plan, daemon_set)
        if "sharing" not in config:  # a g6f pool: one slice a node, its overlay by family (EC2 reports 0 GPUs)
            (overlay,) = [o for o in plan.objects("NodeOverlay") if o["metadata"]["name"] == f"{name}-g6f-slice"]
            assert overlay["spec"]["capacity"] == {GPU_RESOURCE: "1"}
            continue
        (block,) = config["sharing"].values()
        (resource,) = block["resources"]
        overlays = overlay_gpu_counts(plan, name)
        assert overlays, f"NodePool {name} has no NodeOverlay"
        assert overlays == {gpus: gpus * resource["replicas"] for gpus in overlays}


def test_prod_runs_a_plugin_per_distinct_sharing(prod_plan: Plan, settings: dict[str, StackSettings]) -> None:
    configs = [config_of(prod_plan, ds)[1] for ds in plugin_daemon_sets(prod_plan)]
    replicas = sorted(c["sharing"]["timeSlicing"]["resources"][0]["replicas"] if "sharing" in c else 1 for c in configs)
    assert replicas == sorted(s.replicas for s in settings["prod"].sharing_profiles)
    assert replicas == [1, 3, 4]  # the A10G pool overrides the stack's sharing; the g6f pool is whole


def workloads(plan: Plan) -> list[dict[str, Any]]:
    return [*plan.objects("DaemonSet"), *plan.objects("Deployment")]


def in_labs(workload: dict[str, Any], settings: StackSettings) -> bool:
    return workload["metadata"]["namespace"] in {lab.name for lab in settings.labs}


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_every_workload_has_exactly_one_deny_all_network_policy(
    stack: str, plans: dict[str, Plan], settings: dict[str, StackSettings]
) -> None:
    """One deny-all per plugin profile, plus the demo's only when it runs in a namespace of its own: in a lab
    (staging) the lab's policies select every pod, and NetworkPolicies are additive, so a deny-all there would
    deny nothing. prod: one per plugin profile and no demo."""
    plan, stack_settings = plans[stack], settings[stack]
    # Lab namespaces' own fences (tests/labs/test_labs.py) and the timetable's (tests/timetable/test_lab_timetable.py) are not
    # per-workload policies.
    policies = [
        p
        for p in plan.objects("NetworkPolicy")
        if LAB_LABEL_KEY not in p["metadata"]["labels"] and p["metadata"]["namespace"] != TIMETABLE_NAMESPACE
    ]
    fenced = [w for w in workloads(plan) if not in_labs(w, stack_settings)]
    demo_has_own_namespace = stack_settings.demo.enabled and stack_settings.demo.namespace not in {
        lab.name for lab in stack_settings.labs
    }
    # The GPU metrics exporter talks to the host engine and the API server: its policy allows exactly that.
    exporter_policy = dcgm_exporter_manifests.network_policy()
    policies = [p for p in policies if p != exporter_policy]
    # The hub's GPU idle reaper opens egress for the hub pod alone (tests/hub/test_hub_gpu_idle.py).
    policies = [p for p in policies if p["metadata"]["labels"].get("app.kubernetes.io/name") != "gpu-idle-reaper"]
    fenced = [w for w in fenced if w["metadata"]["name"] != DCGM_EXPORTER_NAME]
    expected = len(stack_settings.sharing_profiles) + (1 if demo_has_own_namespace else 0)
    assert len(policies) == len(fenced) == expected
    for policy in policies:
        assert validate_core_object(policy, stack_settings.kubernetes_version) == []
    for workload in workloads(plan):
        namespace = workload["metadata"]["namespace"]
        governing = [
            p
            for p in plan.objects("NetworkPolicy")
            if p["metadata"]["namespace"] == namespace
            and selects(p, workload["spec"]["template"]["metadata"]["labels"])
        ]
        if in_labs(workload, stack_settings):
            assert governing and all(LAB_LABEL_KEY in p["metadata"]["labels"] for p in governing)
            continue
        if workload["metadata"]["name"] == DCGM_EXPORTER_NAME:
            assert governing == [exporter_policy]
            continue
        assert len(governing) == 1, f"{workload['metadata']['name']}: {len(governing)} policies select its pods"
        assert deny_all_problems(governing[0], workload) == []


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_network_policies_are_children_created_before_their_pods(
    stack: str, plans: dict[str, Plan], settings: dict[str, StackSettings]
) -> None:
    """A workload's pods start after the policies that select them: its own deny-all, or its lab's fences."""
    plan = plans[stack]
    policies = plan.of_type(NETWORK_POLICY)
    for workload in [*plan.of_type("kubernetes:apps/v1:DaemonSet"), *plan.of_type("kubernetes:apps/v1:Deployment")]:
        labels = workload["inputs"]["spec"]["template"]["metadata"]["labels"]
        governing = [
            r
            for r in policies
            if r["inputs"]["metadata"]["namespace"] == workload["inputs"]["metadata"]["namespace"]
            and selects(r["inputs"], labels)
        ]
        assert governing
        for policy in governing:
            assert policy["urn"] in workload["dependencies"]
        if not in_labs(workload["inputs"], settings[stack]):
            (policy,) = governing
            assert policy["parent"] == workload["parent"]  # the workload's own component owns its deny-all


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_plugin_daemon_sets_carry_their_checkov_skips(stack: str, plans: dict[str, Plan]) -> None:
    for daemon_set in plugin_daemon_sets(plans[stack]):
        reasons = skip_reasons(daemon_set)
        assert reasons and all(reason.strip() for reason in reasons.values())
