"""No lab pod reaches the DCGM host engine's port (issue 30): the rendered NetworkPolicies, evaluated.

A small model of NetworkPolicy egress (Kubernetes "Network Policies": a pod selected by any Egress policy
may send only what some rule of those policies allows; rules are additive; a rule without `to` allows every
destination, one without `ports` every port; a `podSelector` peer without `namespaceSelector` means pods of
the policy's own namespace). Destinations here are a GPU node's IP (the engine's hostPort) and the engine's
own pod in kube-system.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import pytest

from components.facts.constants import DCGM_HOSTENGINE_PORT
from components.renderers.lab_rbac import lab_group
from offline.plan import Plan
from tests.conftest import STACKS
from tests.rbac_model import RBAC_KINDS, Rbac, Request


@dataclass(frozen=True)
class Destination:
    ip: str
    port: int
    protocol: str = "TCP"
    namespace: str | None = None  # None: not a pod (a node's IP)
    labels: tuple[tuple[str, str], ...] = ()


def _selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert not selector.get("matchExpressions"), "model covers matchLabels only"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _peer_matches(peer: dict[str, Any], policy_ns: str, dest: Destination) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        address = ipaddress.ip_address(dest.ip)
        inside = address in ipaddress.ip_network(block["cidr"])
        return inside and not any(address in ipaddress.ip_network(c) for c in block.get("except", []))
    if dest.namespace is None:
        return False  # pod and namespace selectors select pods only
    if "namespaceSelector" not in peer and dest.namespace != policy_ns:
        return False
    assert not peer.get("namespaceSelector"), "no rendered lab policy selects other namespaces"
    return _selects(peer.get("podSelector", {}), dict(dest.labels))


def _port_matches(port: dict[str, Any], dest: Destination) -> bool:
    return port.get("protocol", "TCP") == dest.protocol and port.get("port") in (None, dest.port)


def egress_allowed(policies: list[dict[str, Any]], namespace: str, pod: dict[str, str], dest: Destination) -> bool:
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == namespace
        and "Egress" in p["spec"].get("policyTypes", [])
        and _selects(p["spec"]["podSelector"], pod)
    ]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("egress", []):
            peers, ports = rule.get("to"), rule.get("ports")
            peer_ok = not peers or any(_peer_matches(peer, namespace, dest) for peer in peers)
            port_ok = not ports or any(_port_matches(port, dest) for port in ports)
            if peer_ok and port_ok:
                return True
    return False


def _labs(plan: Plan) -> list[dict[str, Any]]:
    return [ns for ns in plan.objects("Namespace") if "gpu-platform.io/lab" in ns["metadata"]["labels"]]


NODE_IP = "10.20.1.17"  # a private VPC address, as a GPU node's is
ENGINE_POD = Destination(
    "10.20.1.40", DCGM_HOSTENGINE_PORT, namespace="kube-system", labels=(("k8s-app", "dcgm-server"),)
)


@pytest.mark.parametrize("stack", STACKS)
def test_no_lab_pod_reaches_the_dcgm_engine_on_a_node_or_its_pod(plans: dict[str, Plan], stack: str) -> None:
    policies = plans[stack].objects("NetworkPolicy")
    notebook = {"app": "jupyterhub", "component": "singleuser-server"}
    for ns in _labs(plans[stack]):
        lab = ns["metadata"]["name"]
        assert not egress_allowed(policies, lab, notebook, Destination(NODE_IP, DCGM_HOSTENGINE_PORT)), lab
        assert not egress_allowed(policies, lab, notebook, ENGINE_POD), lab
        # What stays reachable, and the model says so (it is not a deny-everything stub).
        assert egress_allowed(policies, lab, notebook, Destination(NODE_IP, 443))
        assert egress_allowed(policies, lab, notebook, Destination("10.100.0.10", 53, "UDP", "kube-system"))
        assert egress_allowed(policies, lab, notebook, Destination("10.20.2.2", 8888, namespace=lab))
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
