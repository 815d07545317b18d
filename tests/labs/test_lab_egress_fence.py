"""No lab pod reaches the DCGM host engine's port (issue 30): the rendered NetworkPolicies, evaluated.

Evaluated with `tests/support/netpol_model.py`. Destinations here are a GPU node's IP (the engine's hostPort) and the
engine's own pod in kube-system; and the hub in `<lab>-hub`, which the lab's notebooks reach on its API port only.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.facts.constants import DCGM_HOSTENGINE_PORT
from components.facts.jupyterhub_chart import HUB_API_PORT, HUB_POD, NOTEBOOK_POD
from components.renderers.hub.hub_namespace import hub_namespace
from components.renderers.labs.lab_rbac import lab_group
from offline.plan import Plan
from tests.conftest import STACKS
from tests.support.netpol_model import Destination, egress_allowed
from tests.support.rbac_model import RBAC_KINDS, Rbac, Request


def _labs(plan: Plan) -> list[dict[str, Any]]:
    return [ns for ns in plan.objects("Namespace") if "gpu-platform.io/lab" in ns["metadata"]["labels"]]


NODE_IP = "10.20.1.17"  # a private VPC address, as a GPU node's is
ENGINE_POD = Destination(
    "10.20.1.40", DCGM_HOSTENGINE_PORT, namespace="kube-system", labels=(("k8s-app", "dcgm-server"),)
)


@pytest.mark.parametrize("stack", STACKS)
def test_no_lab_pod_reaches_the_dcgm_engine_on_a_node_or_its_pod(plans: dict[str, Plan], stack: str) -> None:
    policies = plans[stack].objects("NetworkPolicy")
    notebook = {"app": "jupyterhub", **NOTEBOOK_POD}  # kubespawner's labels (hub_notebook_pod)
    for ns in _labs(plans[stack]):
        lab = ns["metadata"]["name"]
        assert not egress_allowed(policies, lab, notebook, Destination(NODE_IP, DCGM_HOSTENGINE_PORT)), lab
        assert not egress_allowed(policies, lab, notebook, ENGINE_POD), lab
        # What stays reachable, and the model says so (it is not a deny-everything stub).
        assert egress_allowed(policies, lab, notebook, Destination(NODE_IP, 443))
        assert egress_allowed(policies, lab, notebook, Destination("10.100.0.10", 53, "UDP", "kube-system"))
        assert egress_allowed(policies, lab, notebook, Destination("10.20.2.2", 8888, namespace=lab))
        # The hub's API in `<lab>-hub` (for labs with a hub), on its port only; another lab's hub not at all.
        hub = Destination("10.20.3.3", HUB_API_PORT, namespace=hub_namespace(lab), labels=tuple(HUB_POD.items()))
        has_hub = any(o["metadata"]["name"] == hub_namespace(lab) for o in plans[stack].objects("Namespace"))
        assert egress_allowed(policies, lab, notebook, hub) == has_hub, lab
        assert not egress_allowed(policies, lab, notebook, Destination(hub.ip, 8001, namespace=hub.namespace))
        other = Destination(hub.ip, HUB_API_PORT, namespace="another-lab-hub", labels=tuple(HUB_POD.items()))
        assert not egress_allowed(policies, lab, notebook, other)
        # No pod of the lab escapes the policy through the host's network.
        assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


@pytest.mark.parametrize("stack", STACKS)
def test_no_member_can_lower_the_fence(plans: dict[str, Plan], stack: str) -> None:
    rbac = Rbac([obj for kind in RBAC_KINDS for obj in plans[stack].objects(kind)])
    for ns in _labs(plans[stack]):
        lab = ns["metadata"]["name"]
        for verb in ("create", "update", "patch", "delete", "deletecollection"):
            for group in ("networking.k8s.io", "extensions"):
                request = Request(verb, group, "networkpolicies", namespace=lab, groups=(lab_group(lab),))
                assert not rbac.allows(request), (lab, verb, group)
