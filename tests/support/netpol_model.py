"""A small model of NetworkPolicy evaluation over rendered policies (Kubernetes "Network Policies"). Pure.

A pod selected by any policy of a direction may send (or take) only what some rule of those policies allows;
rules are additive; a rule without `to`/`from` allows every peer, one without `ports` every port; a `podSelector`
peer without `namespaceSelector` means pods of the policy's own namespace; a `namespaceSelector` matches namespace
labels, here the API server's own `kubernetes.io/metadata.name`. For ingress, `Destination` is the source pod and
its `port` the port it connects to.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Destination:
    ip: str
    port: int
    protocol: str = "TCP"
    namespace: str | None = None  # None: not a pod (a node's IP)
    labels: tuple[tuple[str, str], ...] = ()


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    assert not selector.get("matchExpressions"), "model covers matchLabels only"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def peer_matches(peer: dict[str, Any], policy_ns: str, dest: Destination) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        address = ipaddress.ip_address(dest.ip)
        inside = address in ipaddress.ip_network(block["cidr"])
        return inside and not any(address in ipaddress.ip_network(c) for c in block.get("except", []))
    if dest.namespace is None:
        return False  # pod and namespace selectors select pods only
    if "namespaceSelector" not in peer and dest.namespace != policy_ns:
        return False
    namespace_labels = {"kubernetes.io/metadata.name": dest.namespace}
    if "namespaceSelector" in peer and not selects(peer["namespaceSelector"], namespace_labels):
        return False
    return selects(peer.get("podSelector", {}), dict(dest.labels))


def port_matches(port: dict[str, Any], dest: Destination) -> bool:
    return port.get("protocol", "TCP") == dest.protocol and port.get("port") in (None, dest.port)


def egress_allowed(policies: list[dict[str, Any]], namespace: str, pod: dict[str, str], dest: Destination) -> bool:
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == namespace
        and "Egress" in p["spec"].get("policyTypes", [])
        and selects(p["spec"]["podSelector"], pod)
    ]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("egress", []):
            peers, ports = rule.get("to"), rule.get("ports")
            peer_ok = not peers or any(peer_matches(peer, namespace, dest) for peer in peers)
            port_ok = not ports or any(port_matches(port, dest) for port in ports)
            if peer_ok and port_ok:
                return True
    return False


def ingress_allowed(policies: list[dict[str, Any]], namespace: str, pod: dict[str, str], source: Destination) -> bool:
    """Whether `source` may open a connection to `pod` (in `namespace`) on `source.port`: the mirror of egress."""
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == namespace
        and "Ingress" in p["spec"].get("policyTypes", [])
        and selects(p["spec"]["podSelector"], pod)
    ]
    if not selecting:
        return True
    for policy in selecting:
        for rule in policy["spec"].get("ingress", []):
            peers, ports = rule.get("from"), rule.get("ports")
            peer_ok = not peers or any(peer_matches(peer, namespace, source) for peer in peers)
            port_ok = not ports or any(port_matches(port, source) for port in ports)
            if peer_ok and port_ok:
                return True
    return False
