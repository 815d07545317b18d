"""What a lab member may do in the lab's namespace: a Role the platform renders, bound to the lab's group.

Pure renderer (a lab in, manifests out). It replaces `AmazonEKSEditPolicy` (Kubernetes' `edit`), which let a
member rewrite the lab's fences: `edit` writes `networkpolicies` (networking.k8s.io and extensions), and
NetworkPolicies are additive, so creating one is enough to open egress, e.g. to the node monitoring agent's
unauthenticated DCGM host engine on every GPU node (port 5555). The Role keeps what members need to teach:
workloads, ConfigMaps, Secrets, Services, PVCs, logs, exec/attach/port-forward, events. It leaves out:
- writes to `networkpolicies`, `resourcequotas`, `limitranges` (read only, so members can see their fences);
- `roles`, `rolebindings` and every RBAC verb (`bind`, `escalate`), `impersonate` and `serviceaccounts/token`:
  no way to take another identity's rights through the API;
- the namespace itself, `endpoints` and `endpointslices` writes (traffic hijack, CVE-2021-25740),
  `poddisruptionbudgets` (one could block Karpenter's consolidation and expiry of shared GPU nodes),
  `daemonsets` (a pod on every node), `ingresses` and `leases`.
The platform's own objects in the namespace (quota, LimitRange, NetworkPolicies) are therefore out of reach;
the hub's Secrets and objects live in `<lab>-hub` (`hub_namespace`), where members have no binding.
"""

from __future__ import annotations

from typing import Any, Final

from components.facts.constants import LAB_MEMBER_GROUP_PREFIX, PROJECT
from components.settings import LabSettings

Manifest = dict[str, Any]

ROLE_NAME: Final = "lab-member"
RBAC_GROUP: Final = "rbac.authorization.k8s.io"
READ: Final = ("get", "list", "watch")
WRITE: Final = ("create", "update", "patch", "delete", "deletecollection")
READ_WRITE: Final = (*READ, *WRITE)

# (apiGroups, resources, verbs), in the order the Role lists them.
MEMBER_RULES: Final[tuple[tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]] = (
    # Run workloads and the objects they use.
    (("",), ("pods", "configmaps", "secrets", "services", "persistentvolumeclaims"), READ_WRITE),
    (("apps",), ("deployments", "deployments/scale", "statefulsets", "statefulsets/scale", "replicasets"), READ_WRITE),
    (("batch",), ("jobs", "cronjobs"), READ_WRITE),
    (("autoscaling",), ("horizontalpodautoscalers",), READ_WRITE),
    # Debug them: kubectl exec/attach/port-forward open a `create` (websocket: `get`) on the subresource.
    (("",), ("pods/exec", "pods/attach", "pods/portforward"), ("get", "create")),
    (("",), ("pods/log", "pods/status", "events", "serviceaccounts", "endpoints"), READ),
    (("events.k8s.io",), ("events",), READ),
    (("apps",), ("controllerrevisions",), READ),
    # See the fences, never change them.
    (("",), ("resourcequotas", "limitranges"), READ),
    (("networking.k8s.io",), ("networkpolicies",), READ),
)


def lab_group(lab_name: str) -> str:
    """The Kubernetes group a lab's members carry on their access entry (`kubernetesGroups`)."""
    return f"{LAB_MEMBER_GROUP_PREFIX}{lab_name}"


def _metadata(lab: LabSettings) -> Manifest:
    labels = {"app.kubernetes.io/part-of": PROJECT, "app.kubernetes.io/managed-by": "pulumi"}
    return {"name": ROLE_NAME, "namespace": lab.name, "labels": labels}


def member_role(lab: LabSettings) -> Manifest:
    rules = [
        {"apiGroups": list(groups), "resources": list(resources), "verbs": list(verbs)}
        for groups, resources, verbs in MEMBER_RULES
    ]
    return {"apiVersion": f"{RBAC_GROUP}/v1", "kind": "Role", "metadata": _metadata(lab), "rules": rules}


def member_binding(lab: LabSettings) -> Manifest:
    return {
        "apiVersion": f"{RBAC_GROUP}/v1",
        "kind": "RoleBinding",
        "metadata": _metadata(lab),
        "subjects": [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": lab_group(lab.name)}],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": ROLE_NAME},
    }


def member_rbac(lab: LabSettings) -> list[Manifest]:
    """The Role, then its binding (the binding names the Role, so it comes second)."""
    return [member_role(lab), member_binding(lab)]


def rule_lines(indent: str = "") -> list[str]:
    """`resources: verbs`, one line per rule: what the summary's access matrix prints for each lab group."""
    lines = []
    for groups, resources, verbs in MEMBER_RULES:
        prefix = "" if groups == ("",) else f"{groups[0]}/"
        lines.append(f"{indent}{', '.join(prefix + r for r in resources)}: {', '.join(verbs)}")
    return lines
