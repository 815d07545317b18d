"""The fit model's requests table against the synthesized plans: for every object the program renders (manifests/,
helm.json values, add-on configuration values), the requests, the nodeSelector, the required node affinity and
the tolerations the table claims are the ones the plan sets, so the table cannot drift from what is deployed."""

from __future__ import annotations

import json
from typing import Any

import yaml

from components.facts import pod_requests
from components.facts.constants import GPU_TOLERATION
from components.facts.node_allocatable import NO_REQUEST, Allocatable
from components.facts.pod_requests import PodShape
from components.settings.checks import fit
from offline.plan import Plan
from tests.conftest import STACKS, shared_path
from tests.support.settings import settings_for

Spec = dict[str, Any]


def pod_spec_of(obj: dict[str, Any]) -> Spec:
    kind = obj["kind"]
    if kind == "Pod":
        return obj["spec"]
    if kind == "PodTemplate":
        return obj["template"]["spec"]
    if kind == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return obj["spec"]["template"]["spec"]


def requests_of(spec: Spec) -> Allocatable:
    """What the scheduler counts: the containers' requests summed, or an init container's if larger."""

    def one(container: Spec) -> Allocatable:
        requests = container.get("resources", {}).get("requests", {})
        return pod_requests.requests_of({k: str(v) for k, v in requests.items() if k in ("cpu", "memory")})

    total = sum((one(c) for c in spec["containers"]), NO_REQUEST)
    for init in spec.get("initContainers", []):
        init_requests = one(init)
        total = Allocatable(
            max(total.cpu_millicores, init_requests.cpu_millicores), max(total.memory_mib, init_requests.memory_mib)
        )
    return total


def required_affinity(spec: Spec) -> tuple[pod_requests.Expression, ...]:
    required = spec.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return ()
    (term,) = required["nodeSelectorTerms"]
    return tuple((e["key"], e["operator"], tuple(e.get("values", ()))) for e in term["matchExpressions"])


def assert_matches(shape: PodShape, spec: Spec, what: str) -> None:
    assert requests_of(spec) == shape.requests, what
    assert spec.get("nodeSelector", {}) == dict(shape.node_selector), what
    assert required_affinity(spec) == shape.affinity, what
    assert [dict(t) for t in spec.get("tolerations", [])] == [dict(t) for t in shape.tolerations], what


def test_rendered_pods_request_what_the_table_claims(plans: dict[str, Plan]) -> None:
    for stack in STACKS:
        plan, settings = plans[stack], settings_for(stack)
        checked: set[str] = set()
        for daemonset in plan.objects("DaemonSet"):
            name = daemonset["metadata"]["name"]
            if name == pod_requests.DCGM_EXPORTER.name:
                shape = pod_requests.DCGM_EXPORTER
            else:
                sharing = next(s for s in settings.sharing_profiles if name.endswith(s.profile))
                shapes = pod_requests.device_plugin(sharing.profile, mps=sharing.strategy == "mps")
                shape = next(s for s in shapes if s.name == name)
            assert_matches(shape, pod_spec_of(daemonset), f"{stack} DaemonSet {name}")
            checked.add(shape.source)
        for deployment in plan.objects("Deployment"):
            assert_matches(pod_requests.DEMO_POD, pod_spec_of(deployment), f"{stack} demo")
            assert deployment["spec"]["replicas"] == settings.demo.replicas
            checked.add(pod_requests.DEMO_POD.source)
        for job in plan.objects("CronJob"):
            assert_matches(pod_requests.TIMETABLE_JOB, pod_spec_of(job), f"{stack} CronJob {job['metadata']['name']}")
            checked.add(pod_requests.TIMETABLE_JOB.source)
        pools = {pool.name: pool for pool in settings.resolved.karpenter_pools}
        for template in plan.objects("PodTemplate"):
            pool = pools[pod_spec_of(template)["nodeSelector"]["karpenter.sh/nodepool"]]
            shape = fit.gpu_notebook(pool)
            assert_matches(shape, pod_spec_of(template), f"{stack} warm slot {pool.name}")
            checked.add("renderers/karpenter/warm_headroom_manifests.py")
        for pod in plan.objects("Pod"):
            spec = pod_spec_of(pod)
            pinned = spec["nodeSelector"].get("karpenter.sh/nodepool")
            shape = fit.gpu_notebook(pools[pinned]) if pinned else fit.cpu_notebook()
            assert_matches(shape, spec, f"{stack} notebook {pod['metadata']['name']}")
            checked.add(shape.source)
        rendered = {
            shape.source
            for shape in (*fit.daemonsets(settings), *(p.pod for p in fit.workloads(settings)))
            if shape.source.startswith("renderers/") and shape.source != "renderers/karpenter/karpenter_values.py"
        }
        # Every table entry for an object the program renders was compared with the plan (the controller: below).
        assert rendered <= checked, (stack, rendered - checked)
        assert len(rendered) >= 4, rendered


def test_chart_values_place_and_size_what_the_table_claims(plans: dict[str, Plan]) -> None:
    z2jh = yaml.safe_load(shared_path("schemas/jupyterhub/4.4.0/values.yaml").read_text(encoding="utf-8"))
    # The chart's own defaults, which the table cites: no requests for the hub or the proxy.
    assert z2jh["hub"]["resources"] == {} and z2jh["proxy"]["chp"]["resources"] == {}
    for stack in STACKS:
        charts = {chart["name"]: chart["values"] for chart in plans[stack].helm}
        karpenter = charts["karpenter"]
        controller = pod_requests.KARPENTER_CONTROLLER
        assert pod_requests.requests_of(karpenter["controller"]["resources"]["requests"]) == controller.requests
        assert karpenter["nodeSelector"] == dict(controller.node_selector)
        spec = {"affinity": karpenter["affinity"]}
        assert required_affinity(spec) == controller.affinity
        assert "tolerations" not in karpenter  # the chart's default: CriticalAddonsOnly, as the table says
        assert karpenter["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert controller.one_per_node
        for name, values in charts.items():
            if name != "jupyterhub":
                continue
            assert values["hub"]["nodeSelector"] == dict(pod_requests.HUB.node_selector)
            assert values["proxy"]["chp"]["nodeSelector"] == dict(pod_requests.PROXY.node_selector)
            assert "resources" not in values["hub"] and "resources" not in values["proxy"]["chp"]


def test_addon_configuration_tolerates_what_the_table_claims(plans: dict[str, Plan]) -> None:
    for stack in STACKS:
        addons = {
            r["inputs"]["addonName"]: json.loads(r["inputs"].get("configurationValues") or "{}")
            for r in plans[stack].of_type("aws:eks/addon:Addon")
        }
        cloudwatch = addons["amazon-cloudwatch-observability"]
        assert tuple(cloudwatch["tolerations"]) == pod_requests.CLOUDWATCH_AGENT.tolerations
        assert "resources" not in cloudwatch.get("agent", {}) and "manager" not in cloudwatch
        monitoring = addons["eks-node-monitoring-agent"]
        assert tuple(monitoring["nodeAgent"]["tolerations"]) == pod_requests.NODE_MONITORING_AGENT.tolerations
        assert monitoring["dcgmAgent"]["tolerations"] == [dict(GPU_TOLERATION)]
        assert tuple(pod_requests.DCGM_SERVER.tolerations) == (GPU_TOLERATION,)
        assert "resources" not in monitoring["nodeAgent"] and "resources" not in monitoring["dcgmAgent"]
