"""The upstream `edit` ClusterRole that `AmazonEKSEditPolicy` stood for, transcribed with its aggregation.

kubernetes/kubernetes `plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go` `clusterRoles()`: `edit`
has no rules of its own, only `aggregationRule` (`aggregate-to-edit: "true"`); `system:aggregate-to-edit`
carries the write rules and `view` (labelled `aggregate-to-edit`) aggregates `system:aggregate-to-view`.
Transcribed from the file the tests of that package hold policy.go to,
`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml`, read at commit 025f2834a128
(the index's copy: its rules carry the 1.2x-1.3x additions: `pods/eviction`, `events` and `leases` writes,
`serviceaccounts/token`, `discovery.k8s.io/endpointslices` view; no `endpoints` write since CVE-2021-25740).
The v1.35.0 tag's own copy could not be read offline (the repository is too large to fetch whole).
"""

from __future__ import annotations

from typing import Any, Final

READ: Final = ["get", "list", "watch"]
WRITE: Final = ["create", "delete", "deletecollection", "patch", "update"]
_EDIT_LABEL = {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}
_VIEW_LABEL = {"rbac.authorization.k8s.io/aggregate-to-view": "true"}


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


AGGREGATE_TO_EDIT_RULES: Final = [
    _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"], READ),
    _rule([""], ["serviceaccounts"], ["impersonate"]),
    _rule([""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], WRITE),
    _rule([""], ["pods/eviction"], ["create"]),
    _rule(
        [""],
        [
            "configmaps",
            "events",
            "persistentvolumeclaims",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "secrets",
            "serviceaccounts",
            "services",
            "services/proxy",
        ],
        WRITE,
    ),
    _rule([""], ["serviceaccounts/token"], ["create"]),
    _rule(
        ["apps"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "replicasets",
            "replicasets/scale",
            "statefulsets",
            "statefulsets/scale",
        ],
        WRITE,
    ),
    _rule(["autoscaling"], ["horizontalpodautoscalers"], WRITE),
    _rule(["batch"], ["cronjobs", "jobs"], WRITE),
    _rule(
        ["extensions"],
        [
            "daemonsets",
            "deployments",
            "deployments/rollback",
            "deployments/scale",
            "ingresses",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicationcontrollers/scale",
        ],
        WRITE,
    ),
    _rule(["policy"], ["poddisruptionbudgets"], WRITE),
    _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], WRITE),
    _rule(["coordination.k8s.io"], ["leases"], [*READ, *WRITE]),
]

AGGREGATE_TO_VIEW_RULES: Final = [
    _rule(
        [""],
        [
            "configmaps",
            "endpoints",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "pods",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "serviceaccounts",
            "services",
            "services/status",
        ],
        READ,
    ),
    _rule(
        [""],
        [
            "bindings",
            "events",
            "limitranges",
            "namespaces/status",
            "pods/log",
            "pods/status",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
        ],
        READ,
    ),
    _rule([""], ["namespaces"], READ),
    _rule(["discovery.k8s.io"], ["endpointslices"], READ),
    _rule(
        ["apps"],
        [
            "controllerrevisions",
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "statefulsets",
            "statefulsets/scale",
            "statefulsets/status",
        ],
        READ,
    ),
    _rule(["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], READ),
    _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
    _rule(
        ["extensions"],
        [
            "daemonsets",
            "daemonsets/status",
            "deployments",
            "deployments/scale",
            "deployments/status",
            "ingresses",
            "ingresses/status",
            "networkpolicies",
            "replicasets",
            "replicasets/scale",
            "replicasets/status",
            "replicationcontrollers/scale",
        ],
        READ,
    ),
    _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
    _rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], READ),
]


def _cluster_role(name: str, labels: dict[str, str], **body: Any) -> dict[str, Any]:
    metadata = {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **labels}}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": metadata, **body}


def edit_cluster_roles() -> list[dict[str, Any]]:
    """`edit`, `view` and the two aggregated-from roles, as the API server bootstraps them."""
    selector = {"clusterRoleSelectors": [{"matchLabels": _EDIT_LABEL}]}
    view_selector = {"clusterRoleSelectors": [{"matchLabels": _VIEW_LABEL}]}
    admin_label = {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}
    return [
        _cluster_role("edit", admin_label, aggregationRule=selector, rules=None),
        _cluster_role("view", _EDIT_LABEL, aggregationRule=view_selector, rules=None),
        _cluster_role("system:aggregate-to-edit", _EDIT_LABEL, rules=AGGREGATE_TO_EDIT_RULES),
        _cluster_role("system:aggregate-to-view", _VIEW_LABEL, rules=AGGREGATE_TO_VIEW_RULES),
    ]


def edit_binding(namespace: str, group: str) -> dict[str, Any]:
    """What the namespace-scoped `AmazonEKSEditPolicy` association amounted to: `edit` in one namespace."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "former-edit", "namespace": namespace},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
    }
