"""The hub in `<lab>-hub` (issue 30): members have no rights there, the hub spawns into the lab, traffic flows.

RBAC is evaluated by `tests/support/rbac_model.py` over every stack's rendered Roles and bindings; traffic by
`tests/support/netpol_model.py` over the lab's rendered policies and the chart's own hub and proxy policies as
templates/hub/netpol.yaml and templates/proxy/netpol.yaml @ 4.4.0 build them from the values.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.facts import jupyterhub_chart
from components.facts.constants import ACCESS_ENTRY_MARKER_GROUP
from components.renderers.hub import hub_namespace as hn
from components.renderers.labs.lab_manifests import CONTAINER_DEFAULT_REQUESTS
from components.renderers.labs.lab_rbac import lab_group
from components.settings import SettingsError, load_settings
from offline.config_files import read_stack_config
from offline.plan import Plan
from tests.conftest import PROJECT_DIR, STACKS
from tests.support.netpol_model import Destination, egress_allowed, ingress_allowed
from tests.support.rbac_model import RBAC_KINDS, Rbac, Request
from tests.support.settings import settings_for

STAGING = read_stack_config(PROJECT_DIR, "staging")
NOTEBOOK = {"app": "jupyterhub", **jupyterhub_chart.NOTEBOOK_POD}


def _rbac(plan: Plan) -> Rbac:
    return Rbac([obj for kind in RBAC_KINDS for obj in plan.objects(kind)])


def _hub_labs(plan: Plan) -> list[str]:
    return [ns["metadata"]["labels"][hn.HUB_LABEL_KEY] for ns in plan.objects("Namespace")
            if hn.HUB_LABEL_KEY in ns["metadata"]["labels"]]  # fmt: skip


def _as_member(request: Request, namespace: str, lab: str) -> Request:
    return Request(request.verb, request.api_group, request.resource, request.subresource, namespace,
                   groups=(lab_group(lab), ACCESS_ENTRY_MARKER_GROUP))  # fmt: skip


def _as_hub(request: Request, namespace: str, lab: str) -> Request:
    in_namespace = Request(request.verb, request.api_group, request.resource, request.subresource, namespace)
    return in_namespace.as_service_account(hn.hub_namespace(lab), jupyterhub_chart.HUB_SERVICE_ACCOUNT)


@pytest.mark.parametrize("stack", STACKS)
def test_every_hub_has_a_restricted_namespace_of_its_own(plans: dict[str, Plan], stack: str) -> None:
    labs = _hub_labs(plans[stack])
    assert labs, stack
    for lab in labs:
        (ns,) = [n for n in plans[stack].objects("Namespace") if n["metadata"]["name"] == hn.hub_namespace(lab)]
        labels = ns["metadata"]["labels"]
        assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
        assert "gpu-platform.io/gpu-enabled" not in labels and "gpu-platform.io/lab" not in labels  # guard: no GPU
        # The hub and proxy keep the default requests they had in the lab's namespace (the chart sets none).
        (limits,) = [o for o in plans[stack].objects("LimitRange") if o["metadata"]["namespace"] == f"{lab}-hub"]
        assert limits["spec"]["limits"][0]["defaultRequest"] == CONTAINER_DEFAULT_REQUESTS
        (chart,) = [c for c in plans[stack].helm if c["chart"] == "jupyterhub" and c["namespace"] == f"{lab}-hub"]
        assert chart["values"]["hub"]["config"]["KubeSpawner"]["namespace"] == lab


MEMBER_DENIED = [
    ("read a Secret", Request("get", "", "secrets")),
    ("list Secrets", Request("list", "", "secrets")),
    ("exec into the hub", Request("create", "", "pods", "exec")),
    ("exec (websocket upgrade)", Request("get", "", "pods", "exec")),
    ("create a pod (mount the Secret, run as hub)", Request("create", "", "pods")),
    ("read the hub's logs", Request("get", "", "pods", "log")),
    ("port-forward to the hub", Request("create", "", "pods", "portforward")),
    ("mint the hub's token", Request("create", "", "serviceaccounts", "token")),
    ("patch the hub Deployment", Request("patch", "apps", "deployments")),
    ("create a NetworkPolicy", Request("create", "networking.k8s.io", "networkpolicies")),
]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(("what", "request_"), MEMBER_DENIED, ids=[what for what, _ in MEMBER_DENIED])
def test_a_member_has_no_rights_in_the_hub_namespace(
    plans: dict[str, Plan], stack: str, what: str, request_: Request
) -> None:
    rbac = _rbac(plans[stack])
    for lab in _hub_labs(plans[stack]):
        assert not rbac.allows(_as_member(request_, hn.hub_namespace(lab), lab)), (stack, lab, what)
    # Not vacuous: in the lab's own namespace a member reads Secrets and execs.
    lab = _hub_labs(plans[stack])[0]
    assert rbac.allows(_as_member(Request("get", "", "secrets"), lab, lab))
    assert rbac.allows(_as_member(Request("create", "", "pods", "exec"), lab, lab))


SPAWNS = [Request(v, "", r) for r in ("pods", "persistentvolumeclaims") for v in ("create", "delete", "get", "list", "watch")]  # fmt: skip
HUB_DENIED = [
    Request("get", "", "secrets"),  # the lab's Secrets are the members'
    Request("create", "", "pods", "exec"),
    Request("patch", "", "pods"),
    Request("create", "", "services"),
    Request("create", "networking.k8s.io", "networkpolicies"),
    Request("patch", "", "resourcequotas"),
    Request("create", "rbac.authorization.k8s.io", "rolebindings"),
]


@pytest.mark.parametrize("stack", STACKS)
def test_the_hub_spawns_into_its_lab_and_nowhere_else(plans: dict[str, Plan], stack: str) -> None:
    rbac = _rbac(plans[stack])
    labs = _hub_labs(plans[stack])
    for lab in labs:
        for request in [*SPAWNS, Request("list", "", "events"), Request("watch", "", "events")]:
            assert rbac.allows(_as_hub(request, lab, lab)), (lab, request)
        for request in HUB_DENIED:
            assert not rbac.allows(_as_hub(request, lab, lab)), (lab, request)
        # Nothing cluster-wide, nothing in another lab or in kube-system.
        assert not rbac.allows(_as_hub(Request("list", "", "nodes"), "", lab))
        assert not rbac.allows(_as_hub(Request("create", "", "pods"), "", lab))
        assert not rbac.allows(_as_hub(Request("create", "", "pods"), "kube-system", lab))
        for other in labs:
            if other != lab:
                assert not rbac.allows(_as_hub(Request("create", "", "pods"), other, lab)), (lab, other)
    # The model tells service accounts apart (not vacuous): another account in the hub's namespace gets nothing.
    lab = labs[0]
    pod = Request("create", "", "pods", namespace=lab)
    assert not rbac.allows(pod.as_service_account(hn.hub_namespace(lab), "proxy"))
    assert rbac.allows(pod.as_service_account(hn.hub_namespace(lab), jupyterhub_chart.HUB_SERVICE_ACCOUNT))


@pytest.mark.parametrize("stack", STACKS)
def test_notebooks_mount_a_singleuser_secret_in_their_own_namespace(plans: dict[str, Plan], stack: str) -> None:
    """The chart renders its `singleuser` Secret in the release's namespace; the pods mount the lab's copy."""
    plan = plans[stack]
    secrets = {(s["metadata"]["namespace"], s["metadata"]["name"]): s for s in plan.objects("Secret")}
    for lab in _hub_labs(plan):
        assert (
            lab,
            hn.NOTEBOOK_FILES_SECRET,
        ) in secrets  # its data is redacted in the plan: the renderer's is compared
        settings = settings_for(stack)
        secret = hn.singleuser_secret(next(x for x in settings.labs if x.name == lab))
        pods = [pod for name, pod in plan.manifests.items() if name.startswith(f"pod-{lab}-notebook-")]
        assert pods and all(pod["metadata"]["namespace"] == lab for pod in pods)
        for pod in pods:
            (volume,) = [
                v for v in pod["spec"]["volumes"] if v.get("secret", {}).get("secretName") == hn.NOTEBOOK_FILES_SECRET
            ]
            assert {item["key"] for item in volume["secret"]["items"]} == set(secret["stringData"])
        for data in secret["stringData"].values():
            json.loads(data)  # `.json` files, as the chart's toJson writes them


def _chart_policy(lab: str, component: str, values: dict[str, Any]) -> dict[str, Any]:
    """The chart's hub or proxy NetworkPolicy in `<lab>-hub` (templates/{hub,proxy}/netpol.yaml @ 4.4.0): its rule
    to notebooks selects `singleuser-server` pods by `podSelector` alone; `egress` and `ingress` values are added."""
    own = {
        "to": [{"podSelector": {"matchLabels": dict(jupyterhub_chart.NOTEBOOK_POD)}}],
        "ports": [{"port": jupyterhub_chart.NOTEBOOK_PORT}],
    }
    hub_in = {"from": [{"podSelector": {"matchLabels": {"hub.jupyter.org/network-access-hub": "true"}}}],
              "ports": [{"port": jupyterhub_chart.HUB_API_PORT}]}  # fmt: skip
    return {
        "metadata": {"namespace": hn.hub_namespace(lab)},
        "spec": {
            "podSelector": {"matchLabels": {"component": component, "release": jupyterhub_chart.HUB_RELEASE}},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [own, *values.get("egress", [])],
            "ingress": [*([hub_in] if component == "hub" else []), *values.get("ingress", [])],
        },
    }


@pytest.mark.parametrize("stack", STACKS)
def test_hub_proxy_and_notebooks_reach_each_other_across_namespaces(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    for lab in _hub_labs(plan):
        (chart,) = [c for c in plan.helm if c["chart"] == "jupyterhub" and c["namespace"] == hn.hub_namespace(lab)]
        values = chart["values"]
        hub_policy = _chart_policy(lab, "hub", values["hub"]["networkPolicy"])
        proxy_policy = _chart_policy(lab, "proxy", values["proxy"]["chp"]["networkPolicy"])
        lab_policies = plan.objects("NetworkPolicy")
        notebook = Destination(
            "10.20.2.2", jupyterhub_chart.NOTEBOOK_PORT, namespace=lab, labels=tuple(NOTEBOOK.items())
        )
        hub_ns = hn.hub_namespace(lab)
        for component, policy in (("hub", hub_policy), ("proxy", proxy_policy)):
            pod = {"component": component, "release": jupyterhub_chart.HUB_RELEASE}
            assert egress_allowed([policy], hub_ns, pod, notebook), (lab, component)
            # Without the values' addition the chart's own rule would only reach notebooks in `<lab>-hub`.
            bare = _chart_policy(lab, component, {})
            assert not egress_allowed([bare], hub_ns, pod, notebook), (lab, component)
            source = Destination(
                "10.20.3.3", jupyterhub_chart.NOTEBOOK_PORT, namespace=hub_ns, labels=tuple(pod.items())
            )
            assert ingress_allowed(lab_policies, lab, NOTEBOOK, source), (lab, component)
        # The lab's notebooks -> the hub's API: the lab lets them out, the hub's policy lets them in.
        notebook_to_hub = Destination(
            "10.20.2.2", jupyterhub_chart.HUB_API_PORT, namespace=lab, labels=tuple(NOTEBOOK.items())
        )
        assert ingress_allowed([hub_policy], hub_ns, dict(jupyterhub_chart.HUB_POD), notebook_to_hub)
        assert not ingress_allowed(
            [_chart_policy(lab, "hub", {})], hub_ns, dict(jupyterhub_chart.HUB_POD), notebook_to_hub
        )
        # Nothing else of another namespace reaches the lab's notebooks.
        stranger = Destination(
            "10.20.4.4", jupyterhub_chart.NOTEBOOK_PORT, namespace="another-lab-hub", labels=(("component", "hub"),)
        )
        assert not ingress_allowed(lab_policies, lab, NOTEBOOK, stranger)


def _problems(labs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    with pytest.raises(SettingsError) as caught:
        load_settings({**STAGING.values, "gpu-platform:labs": json.dumps(labs)}, STAGING.secret_paths)
    return caught.value.problems


def test_a_lab_named_like_another_labs_hub_namespace_is_a_key_path_error() -> None:
    labs = json.loads(STAGING.values["gpu-platform:labs"])
    clash = {"name": f"{labs[0]['name']}-hub", "gpuSlots": 1, "cpu": "1", "memory": "1Gi"}
    found = _problems([*labs, clash])
    assert [path for path, _ in found] == ["gpu-platform:labs[1].name"], found
    assert f"{labs[0]['name']}-hub" in found[0][1] and "gpu-platform:labs[0]" in found[0][1]


def test_a_lab_whose_hub_namespace_is_no_dns_label_is_a_key_path_error() -> None:
    labs = json.loads(STAGING.values["gpu-platform:labs"])
    labs[0]["name"] = "l" * 61
    labs[0].pop("sessions", None)
    found = _problems(labs)
    assert [path for path, _ in found] == ["gpu-platform:labs[0].name"], found
    assert "at most 59 characters" in found[0][1]


@pytest.mark.parametrize("stack", STACKS)
def test_the_hub_reaches_the_api_server_its_logins_and_its_own_proxy(plans: dict[str, Plan], stack: str) -> None:
    """The chart's hub policy opens no egress of its own (CHART_EGRESS_OFF) and `<lab>-hub` has no lab-wide DNS +
    HTTPS policy: KubeSpawner's API calls, the login providers and CloudWatch need 443 from the values; the reaper
    reads kernels through the proxy's HTTP port. Without the values' additions none of it is open."""
    plan = plans[stack]
    for lab in _hub_labs(plan):
        (chart,) = [c for c in plan.helm if c["chart"] == "jupyterhub" and c["namespace"] == hn.hub_namespace(lab)]
        hub_ns = hn.hub_namespace(lab)
        hub_policy = _chart_policy(lab, "hub", chart["values"]["hub"]["networkPolicy"])
        hub_pod = {"component": "hub", "release": jupyterhub_chart.HUB_RELEASE}
        api_server = Destination("10.20.0.10", 443)  # the kubernetes Service's endpoints: the control plane's ENIs
        proxy = Destination("10.20.3.4", jupyterhub_chart.PROXY_HTTP_PORT, namespace=hub_ns, labels=(("app", "jupyterhub"), ("component", "proxy")))  # fmt: skip
        for destination in (api_server, proxy):
            assert egress_allowed([hub_policy], hub_ns, hub_pod, destination), (lab, destination)
            assert not egress_allowed([_chart_policy(lab, "hub", {})], hub_ns, hub_pod, destination), (lab, destination)
