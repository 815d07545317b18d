"""A model of Kubernetes RBAC evaluation over rendered Roles, ClusterRoles and bindings. Pure.

Follows kubernetes/kubernetes (the v1 forms, unchanged through v1.35, the stacks' `kubernetesVersion`; read
from the stored copies the search index holds, whose commits are not tagged):
- `plugin/pkg/auth/authorizer/rbac/rbac.go` `RBACAuthorizer.Authorize` / `RuleAllows`: a request is allowed
  when any rule of any role bound to the user (a RoleBinding in the request's namespace, or any
  ClusterRoleBinding) allows it; RBAC has no deny;
- `pkg/apis/rbac/v1/evaluation_helpers.go`: `VerbMatches` (`*` or equal), `APIGroupMatches` (`*` or equal),
  `ResourceMatches` (`*`, `resource/subresource` equal, or `*/subresource`), `ResourceNameMatches` (no
  names, or the name listed); a Group subject matches one of the user's groups;
- `pkg/controller/clusterroleaggregation`: an aggregated ClusterRole's rules are the union of the rules of
  every ClusterRole whose labels match one of its `clusterRoleSelectors`.
Non-resource URLs are left out: no rendered rule names any.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Obj = Mapping[str, Any]
RBAC_KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


@dataclass(frozen=True)
class Request:
    """One resource request: `kubectl create networkpolicy -n lab` is
    `Request("create", "networking.k8s.io", "networkpolicies", namespace="lab")`."""

    verb: str
    api_group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    groups: tuple[str, ...] = ()
    user: str = "someone"

    def as_member_of(self, *groups: str) -> Request:
        return Request(self.verb, self.api_group, self.resource, self.subresource, self.namespace, self.name, groups)

    def as_service_account(self, namespace: str, name: str) -> Request:
        """The request made by a pod running as `namespace/name`, with the groups every service account has
        (k8s.io/apiserver `serviceaccount.MakeGroupNames`, plus `system:authenticated`)."""
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated")
        return Request(
            self.verb, self.api_group, self.resource, self.subresource, self.namespace, self.name, groups,
            f"system:serviceaccount:{namespace}:{name}",
        )  # fmt: skip


def _matches(values: Sequence[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def resource_matches(resources: Sequence[str], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for candidate in resources:
        if candidate in ("*", combined):
            return True
        if subresource and candidate == f"*/{subresource}":
            return True
    return False


def rule_allows(rule: Obj, request: Request) -> bool:
    names = rule.get("resourceNames") or []
    return (
        _matches(rule.get("verbs", []), request.verb)
        and _matches(rule.get("apiGroups", []), request.api_group)
        and resource_matches(rule.get("resources", []), request.resource, request.subresource)
        and (not names or request.name in names)
    )


def _labels_match(selector: Obj, labels: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


@dataclass
class Rbac:
    """Every RBAC object of a cluster (or of a synth's manifests), evaluated like the API server's RBAC."""

    objects: list[Obj] = field(default_factory=list)

    @classmethod
    def from_manifests(cls, folder: Path, extra: Iterable[Obj] = ()) -> Rbac:
        found = []
        for path in sorted(folder.glob("*.yaml")):
            obj = yaml.safe_load(path.read_text(encoding="utf-8"))
            if obj.get("kind") in RBAC_KINDS:
                found.append(obj)
        return cls([*found, *extra])

    def _of(self, kind: str) -> list[Obj]:
        return [obj for obj in self.objects if obj["kind"] == kind]

    def cluster_role_rules(self, name: str, seen: frozenset[str] = frozenset()) -> list[Obj]:
        """A ClusterRole's rules; an aggregated one's are its selected roles' (the controller writes those into
        `rules` and repeats until nothing changes: `view`, itself aggregated, feeds `edit`)."""
        role = next((r for r in self._of("ClusterRole") if r["metadata"]["name"] == name), None)
        if role is None or name in seen:
            return []
        selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors", [])
        if not selectors:
            return list(role.get("rules") or [])
        rules: list[Obj] = []
        for other in self._of("ClusterRole"):
            labels = other["metadata"].get("labels", {})
            if other is not role and any(_labels_match(s, labels) for s in selectors):
                rules += self.cluster_role_rules(other["metadata"]["name"], seen | {name})
        return rules

    def _role_rules(self, ref: Obj, namespace: str) -> list[Obj]:
        if ref["kind"] == "ClusterRole":
            return self.cluster_role_rules(ref["name"])
        role = next(
            (
                r
                for r in self._of("Role")
                if r["metadata"]["name"] == ref["name"] and r["metadata"].get("namespace") == namespace
            ),
            None,
        )
        return list(role.get("rules") or []) if role else []

    @staticmethod
    def _subject_matches(subject: Obj, request: Request) -> bool:
        if subject["kind"] == "Group":
            return subject["name"] in request.groups
        if subject["kind"] == "User":
            return subject["name"] == request.user
        # A service account's user name (k8s.io/apiserver `serviceaccount.MakeUsername`).
        return request.user == f"system:serviceaccount:{subject.get('namespace', '')}:{subject['name']}"

    def rules_for(self, request: Request) -> list[Obj]:
        """Every rule bound to the request's user in the request's namespace (cluster-wide ones included)."""
        rules: list[Obj] = []
        for binding in self._of("ClusterRoleBinding"):
            if any(self._subject_matches(s, request) for s in binding.get("subjects") or []):
                rules += self.cluster_role_rules(binding["roleRef"]["name"])
        for binding in self._of("RoleBinding"):
            namespace = binding["metadata"].get("namespace", "")
            if namespace != request.namespace:
                continue
            if any(self._subject_matches(s, request) for s in binding.get("subjects") or []):
                rules += self._role_rules(binding["roleRef"], namespace)
        return rules

    def allows(self, request: Request) -> bool:
        return any(rule_allows(rule, request) for rule in self.rules_for(request))
