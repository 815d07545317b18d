"""Where a lab's hub runs: `<lab>-hub`, a namespace of its own, and what the lab's namespace needs for it.

Pure renderers (a lab in, manifests out). The hub, its proxy and the hub's services (the culler, the GPU idle
reaper) run in `<lab>-hub`, where lab members have no binding: RBAC cannot keep a Secret from someone who may
create pods or exec where it lives (they can mount it, run as the hub's ServiceAccount, or exec into the hub).
KubeSpawner still spawns each notebook into the lab's namespace, under its quota, LimitRange, fences and guard.
For that the lab's namespace holds:
- `hub-spawner`, a Role bound to the hub's ServiceAccount `<lab>-hub/hub` with what KubeSpawner 7.0.0 does there;
- `hub-singleuser-files`, the chart's `singleuser.extraFiles` Secret, which the notebook pods mount by name;
- two NetworkPolicies: hub and proxy -> notebooks :8888, notebooks -> hub API :8081.
"""

from __future__ import annotations

import json
from typing import Any, Final

from components.facts.constants import HUB_NAMESPACE_SUFFIX, PROJECT
from components.facts.jupyterhub_chart import (
    HUB_API_PORT,
    HUB_POD,
    HUB_SERVICE_ACCOUNT,
    NOTEBOOK_POD,
    NOTEBOOK_PORT,
    PROXY_HTTP_PORT,
    PROXY_POD,
    SPAWNER_RULES,
)
from components.renderers.hub.hub_database import notebook_sqlite_files
from components.renderers.labs.lab_manifests import CONTAINER_DEFAULT_REQUESTS, LAB_LABEL_KEY
from components.settings import LabSettings

Manifest = dict[str, Any]

RBAC_GROUP: Final = "rbac.authorization.k8s.io"
SPAWNER_ROLE: Final = "hub-spawner"
HUB_LABEL_KEY: Final = "gpu-platform.io/hub-of"
# The notebooks' copy of the chart's `singleuser` Secret, in the lab's namespace. Not `singleuser`: the release that
# ran in the lab's namespace before owns a Secret of that name there, which its removal deletes after the create.
NOTEBOOK_FILES_SECRET: Final = "hub-singleuser-files"


def hub_namespace(lab_name: str) -> str:
    """The namespace of a lab's hub (settings check that it is a DNS label and no lab's own)."""
    return f"{lab_name}{HUB_NAMESPACE_SUFFIX}"


def hub_service_url(lab_name: str) -> str:
    """The hub's API as the notebooks in the lab's namespace reach it (the chart's default `http://hub:8081` only
    resolves in the hub's own namespace). `<service>.<namespace>.svc` resolves whatever the cluster domain, through
    the `svc.<cluster domain>` entry every pod's DNS search list holds (Kubernetes "DNS for Services and Pods")."""
    return f"http://hub.{hub_namespace(lab_name)}.svc:{HUB_API_PORT}"


def _labels(lab: LabSettings) -> dict[str, str]:
    return {"app.kubernetes.io/part-of": PROJECT, "app.kubernetes.io/managed-by": "pulumi", HUB_LABEL_KEY: lab.name}


def namespace_manifest(lab: LabSettings, kubernetes_version: str) -> Manifest:
    """`<lab>-hub`: Pod Security `restricted`, not GPU-enabled (the guard refuses GPU pods there), no member binding."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": hub_namespace(lab.name),
            "labels": {
                **_labels(lab),
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/enforce-version": f"v{kubernetes_version}",
            },
        },
    }


def hub_limit_range(lab: LabSettings) -> Manifest:
    """The lab's container default requests, kept for the hub and proxy (the chart sets none): in the lab's namespace
    they had them, so they stay Burstable, not first to be evicted from the system nodes."""
    metadata = {"name": "hub-defaults", "namespace": hub_namespace(lab.name), "labels": _labels(lab)}
    limits = [{"type": "Container", "defaultRequest": dict(CONTAINER_DEFAULT_REQUESTS)}]
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": metadata, "spec": {"limits": limits}}


def _in_lab(lab: LabSettings, name: str) -> Manifest:
    """In the lab's namespace: the lab's label too (its fences, quota and guard cover these objects' pods)."""
    return {"name": name, "namespace": lab.name, "labels": {**_labels(lab), LAB_LABEL_KEY: lab.name}}


def spawner_rbac(lab: LabSettings) -> list[Manifest]:
    """The hub ServiceAccount's Role in the lab's namespace, then its binding."""
    rules = [{"apiGroups": list(g), "resources": list(r), "verbs": list(v)} for g, r, v in SPAWNER_RULES]
    role = {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role", "metadata": _in_lab(lab, SPAWNER_ROLE), "rules": rules}
    binding = {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _in_lab(lab, SPAWNER_ROLE),
        "subjects": [{"kind": "ServiceAccount", "name": HUB_SERVICE_ACCOUNT, "namespace": hub_namespace(lab.name)}],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": SPAWNER_ROLE},
    }
    return [role, binding]


def files_volume() -> Manifest:
    """The chart's `files` volume (jupyterhub_config.py @ 4.4.0, "Inject singleuser.extraFiles": one item per file
    key) naming the lab's copy; `singleuser.storage.extraVolumes` as a dict replaces the chart's entry `files`."""
    items = [{"key": key, "path": key} for key in sorted(notebook_sqlite_files())]
    return {"name": "files", "secret": {"items": items, "secretName": NOTEBOOK_FILES_SECRET}}


def singleuser_secret(lab: LabSettings) -> Manifest:
    """The chart's `singleuser.extraFiles` Secret (templates/singleuser/secret.yaml @ 4.4.0: `.json` files' `data`
    as `toJson`, i.e. sorted keys, no spaces), in the lab's namespace where the notebook pods mount it: the chart
    renders it in the release's namespace, which no notebook runs in. Not secret: SQLite file paths."""
    name = NOTEBOOK_FILES_SECRET
    files = notebook_sqlite_files()
    data = {key: json.dumps(files[key]["data"], sort_keys=True, separators=(",", ":")) + "\n" for key in sorted(files)}
    return {"apiVersion": "v1", "kind": "Secret", "metadata": _in_lab(lab, name), "type": "Opaque", "stringData": data}


def _from_hub_namespace(lab: LabSettings, pods: dict[str, str]) -> Manifest:
    return {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": hub_namespace(lab.name)}},
        "podSelector": {"matchLabels": dict(pods)},
    }


def lab_side_policies(lab: LabSettings) -> list[Manifest]:
    """The lab's half of hub <-> notebook traffic (policies are additive; the lab's own still deny the rest). The
    chart's `singleuser` policy would select notebooks in the release's namespace, where none run: it is off."""
    tcp = "TCP"
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _in_lab(lab, "lab-ingress-from-hub"),
        "spec": {
            "podSelector": {"matchLabels": dict(NOTEBOOK_POD)},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [_from_hub_namespace(lab, HUB_POD), _from_hub_namespace(lab, PROXY_POD)],
                    "ports": [{"protocol": tcp, "port": NOTEBOOK_PORT}],
                }
            ],
        },
    }
    egress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _in_lab(lab, "lab-egress-to-hub"),
        "spec": {
            "podSelector": {"matchLabels": dict(NOTEBOOK_POD)},
            "policyTypes": ["Egress"],
            "egress": [{"to": [_from_hub_namespace(lab, HUB_POD)], "ports": [{"protocol": tcp, "port": HUB_API_PORT}]}],
        },
    }
    return [ingress, egress]


def hub_side_values(lab: LabSettings) -> dict[str, Any]:
    """What the chart's own NetworkPolicies (in `<lab>-hub`) add: hub and proxy reach the lab's notebooks on :8888
    (the chart's rules select `singleuser-server` pods by `podSelector` alone, i.e. in the release's namespace), and
    the hub admits the lab's notebooks on :8081 (its rule's `podSelector` alone would admit only local pods)."""
    to_notebooks = {
        "to": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": lab.name}},
                "podSelector": {"matchLabels": dict(NOTEBOOK_POD)},
            }
        ],
        "ports": [{"protocol": "TCP", "port": NOTEBOOK_PORT}],
    }
    from_notebooks = {
        "from": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": lab.name}},
                "podSelector": {"matchLabels": dict(NOTEBOOK_POD)},
            }
        ],
        "ports": [{"protocol": "TCP", "port": HUB_API_PORT}],
    }
    # The chart's hub policy opens no other egress (CHART_EGRESS_OFF): in `<lab>-hub` nothing else gives the hub what
    # the lab's DNS + HTTPS policy gave it before, so it is said here. HTTPS: the Kubernetes API (KubeSpawner, the
    # reaper's pod list and Events), the login providers' token endpoints (github, oidc) and CloudWatch.
    https = {"ports": [{"protocol": "TCP", "port": 443}]}
    # The GPU idle reaper reads learners' kernels through the proxy's HTTP port (hub_gpu_idle.servers_url).
    to_proxy = {
        "to": [{"podSelector": {"matchLabels": {"app": "jupyterhub", "component": "proxy"}}}],
        "ports": [{"protocol": "TCP", "port": PROXY_HTTP_PORT}],
    }
    return {
        "hub_egress": [to_notebooks, https, to_proxy],
        "hub_ingress": [from_notebooks],
        "proxy_egress": [to_notebooks],
    }
