"""Kubernetes objects of one learning lab: its namespace, its share of the cluster, its fences.

Pure renderers (settings in, plain dicts out). Each lab is a namespace that:
- enforces the `restricted` Pod Security Standard and carries the GPU-enabled label the admission
  guard (`components.renderers.labs.gpu_admission_policy`) reads;
- holds a ResourceQuota on `requests.nvidia.com/gpu` (= `gpuSlots`), cpu and memory, with a LimitRange
  that gives every container default requests/limits, so no pod escapes the quota by omitting them;
- admits traffic only from its own namespace and sends only DNS and HTTPS out (dataset/model downloads);
  so no lab pod reaches the node monitoring agent's DCGM host engine (TCP 5555, hostPort on every GPU node),
  and no member can lower that fence: the members' Role (`components.renderers.labs.lab_rbac`) only reads
  NetworkPolicies.
"""

from __future__ import annotations

from typing import Any

from components.facts import pod_requests
from components.facts.constants import GPU_ENABLED_NAMESPACE_LABEL, GPU_RESOURCE, PROJECT
from components.settings import LabSettings

Manifest = dict[str, Any]

LAB_LABEL_KEY = "gpu-platform.io/lab"

# Requests a container gets when it names none (LimitRange), small enough for notebooks' sidecars. No default
# limit: LimitRanger applies a default limit even to a container that sets a larger request, and the API then
# rejects it (request above limit), so a 1Gi default refused every `memory: 4Gi` notebook without a limit. The
# quota therefore caps requests only; a container past its request is first to be evicted or OOM-killed under
# memory pressure (kubelet node-pressure eviction ranks usage above requests first), not its neighbours.
CONTAINER_DEFAULT_REQUESTS = {
    "cpu": f"{pod_requests.LIMIT_RANGE_DEFAULT_REQUESTS.cpu_millicores}m",
    "memory": f"{pod_requests.LIMIT_RANGE_DEFAULT_REQUESTS.memory_mib}Mi",
}

# DNS is served by CoreDNS in kube-system; HTTPS goes anywhere (registries, dataset and model hubs).
DNS_PORTS = ({"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53})
HTTPS_PORT = {"protocol": "TCP", "port": 443}


def _labels(lab: LabSettings) -> dict[str, str]:
    return {"app.kubernetes.io/part-of": PROJECT, "app.kubernetes.io/managed-by": "pulumi", LAB_LABEL_KEY: lab.name}


def _meta(lab: LabSettings, name: str) -> Manifest:
    return {"name": name, "namespace": lab.name, "labels": _labels(lab)}


def lab_namespace(lab: LabSettings, kubernetes_version: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": lab.name,
            "labels": {
                **_labels(lab),
                GPU_ENABLED_NAMESPACE_LABEL: "true",
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/enforce-version": f"v{kubernetes_version}",
            },
        },
    }


def lab_resource_quota(lab: LabSettings) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _meta(lab, "lab-quota"),
        "spec": {
            "hard": {
                # Extended resources are quota'd by their requests only (limits must equal requests).
                f"requests.{GPU_RESOURCE}": str(lab.gpu_slots),
                "requests.cpu": lab.cpu,
                "requests.memory": lab.memory,
            }
        },
    }


def lab_limit_range(lab: LabSettings) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _meta(lab, "lab-defaults"),
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "defaultRequest": dict(CONTAINER_DEFAULT_REQUESTS),
                }
            ]
        },
    }


def lab_network_policies(lab: LabSettings) -> list[Manifest]:
    """Ingress only from the lab's own pods; egress only to DNS and HTTPS (and the lab itself)."""
    same_namespace: list[Manifest] = [{"podSelector": {}}]
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(lab, "lab-ingress-same-namespace"),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": same_namespace}]},
    }
    egress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(lab, "lab-egress-dns-https"),
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {"to": same_namespace},
                {"ports": [dict(port) for port in DNS_PORTS]},
                {"ports": [dict(HTTPS_PORT)]},
            ],
        },
    }
    return [ingress, egress]


def lab_objects(lab: LabSettings, kubernetes_version: str) -> list[Manifest]:
    """Every Kubernetes object of one lab, the namespace first."""
    return [
        lab_namespace(lab, kubernetes_version),
        lab_resource_quota(lab),
        lab_limit_range(lab),
        *lab_network_policies(lab),
    ]
