"""Compare two synth outputs before merging a config change: what is added, removed, changed, and what collides.

    python -m offline.diff OLD_DIR NEW_DIR     (each a `python synth.py --out` folder)

A **collision** is one physical identity (an EKS access entry's principal, an IAM role name, a Kubernetes
kind/namespace/name, ...) that the change deletes under one URN and creates under another, or that two
resources of the new plan claim. The engine creates before it deletes, so AWS or Kubernetes refuses the
create (EKS: 409 ResourceInUseException; IAM: EntityAlreadyExists; Kubernetes: AlreadyExists), or, for an
EKS policy association, the create is a no-op and the delete then removes the access. A resource that
names the old URN in its `aliases` is the same resource (the engine moves its state), not a collision.

Prints a Markdown summary (fit for `$GITHUB_STEP_SUMMARY`), ending with the weekly dollar difference per GPU pool
and fixed line (`offline/cost_diff.py`; "n/a" where the old plan has no forecast); exit 1 on any collision, 0 otherwise, 2 when a
folder holds no plan.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offline.cost_diff import cost_section
from offline.mocks import UNKNOWN

EXIT_SAFE, EXIT_COLLISION, EXIT_NO_PLAN = 0, 1, 2
ENTRY_TYPE = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION_TYPE = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
EKS_CLUSTER_COMPONENT = "eks:index:Cluster"

Resource = dict[str, Any]
Identity = tuple[str, str]  # (kind of identity, value)


def _named(kind: str, *keys: str) -> Callable[[dict[str, Any]], Identity | None]:
    """An identity read from inputs `keys` (joined by '/'); None when any is unset or not known before `up`."""

    def identity(inputs: dict[str, Any]) -> Identity | None:
        values = [inputs.get(key) for key in keys]
        if any(not isinstance(v, str) or not v or v == UNKNOWN for v in values):
            return None
        return kind, "/".join(values)  # type: ignore[arg-type]

    return identity


# Type token -> how its physical identity reads from its inputs. Only names a user or the program sets:
# an auto-named resource (no `name` input) gets a fresh physical name and cannot collide.
IDENTITIES: dict[str, Callable[[dict[str, Any]], Identity | None]] = {
    ENTRY_TYPE: _named("EKS access entry principal", "principalArn"),
    ASSOCIATION_TYPE: _named("EKS access policy association (principal/policy)", "principalArn", "policyArn"),
    "aws:iam/role:Role": _named("IAM role name", "name"),
    "aws:iam/policy:Policy": _named("IAM policy name", "name"),
    "aws:eks/addon:Addon": _named("EKS add-on (cluster/name)", "clusterName", "addonName"),
    "aws:sqs/queue:Queue": _named("SQS queue name", "name"),
    "aws:cloudwatch/eventRule:EventRule": _named("EventBridge rule name", "name"),
    "aws:kms/alias:Alias": _named("KMS alias", "name"),
    "aws:ec2/launchTemplate:LaunchTemplate": _named("launch template name", "name"),
    "aws:cloudwatch/dashboard:Dashboard": _named("CloudWatch dashboard name", "dashboardName"),
    "aws:cloudwatch/metricAlarm:MetricAlarm": _named("CloudWatch alarm name", "name"),
    "aws:cloudwatch/logGroup:LogGroup": _named("CloudWatch log group name", "name"),
    "aws:sns/topic:Topic": _named("SNS topic name", "name"),
    "eks:index:ManagedNodeGroup": _named("EKS node group name", "nodeGroupName"),
}


def identity_of(resource: Resource) -> Identity | None:
    inputs = resource.get("inputs") or {}
    if resource["type"] in IDENTITIES:
        return IDENTITIES[resource["type"]](inputs)
    if resource["type"].startswith("kubernetes:") and resource.get("custom"):
        metadata = inputs.get("metadata") or {}
        name = metadata.get("name") or inputs.get("name")  # a Helm release names itself at the top level
        kind = inputs.get("kind") or resource["type"].rsplit(":", 1)[-1]
        if isinstance(name, str) and name and name != UNKNOWN:
            namespace = metadata.get("namespace") or inputs.get("namespace") or ""
            return "Kubernetes kind/namespace/name", f"{kind}/{namespace}/{name}"
    return None


def _hidden_access_entries(resource: Resource) -> Iterator[Resource]:
    """pulumi-eks's access-entry children of an `eks:index:Cluster` (not registrations of their own): one
    entry `<component>-<key>` per `accessEntries` key and one association `<component>-<key>-<policy key>`
    under it (pulumi/pulumi-eks nodejs/eks/cluster/authenticationMode.ts createAccessEntries, v4.3.0)."""
    prefix, _, name = resource["urn"].rpartition("::")
    inputs = resource.get("inputs", {})
    cluster = {"clusterName": inputs["name"]} if "name" in inputs else {}
    for key, entry in sorted((inputs.get("accessEntries") or {}).items()):
        entry_urn = f"{prefix}${ENTRY_TYPE}::{name}-{key}"
        yield {"urn": entry_urn, "type": ENTRY_TYPE, "custom": True, "inputs": {**entry, **cluster}}
        for policy_key, policy in sorted((entry.get("accessPolicies") or {}).items()):
            yield {
                "urn": f"{prefix}${ENTRY_TYPE}${ASSOCIATION_TYPE}::{name}-{key}-{policy_key}",
                "type": ASSOCIATION_TYPE,
                "custom": True,
                "inputs": {**policy, "principalArn": entry.get("principalArn"), **cluster},
            }


def expand(resources: Sequence[Resource]) -> list[Resource]:
    """The plan's resources plus the hidden children the engine will also create."""
    expanded: list[Resource] = []
    for resource in resources:
        expanded.append(resource)
        if resource["type"] == EKS_CLUSTER_COMPONENT:
            expanded.extend(_hidden_access_entries(resource))
    return expanded


@dataclass(frozen=True)
class Collision:
    identity: Identity
    removed_urn: str | None  # None: both URNs are in the new plan (added twice)
    added_urn: str
    other_new_urn: str | None = None

    def describe(self) -> str:
        kind, value = self.identity
        if self.removed_urn is not None:
            return f"{kind} `{value}`: deleted as `{self.removed_urn}` and created as `{self.added_urn}`"
        return f"{kind} `{value}`: claimed by both `{self.other_new_urn}` and `{self.added_urn}`"


@dataclass(frozen=True)
class Change:
    urn: str
    inputs: tuple[str, ...]  # top-level input keys whose value differs
    former_urn: str | None = None  # matched through an alias
    detail: tuple[str, ...] = ()  # an access entry's groups, old -> new, and the bindings naming them


@dataclass(frozen=True)
class Diff:
    added: list[str]
    removed: list[str]
    changed: list[Change]
    collisions: list[Collision]


def _changed_inputs(old: dict[str, Any], new: dict[str, Any]) -> tuple[str, ...]:
    return tuple(sorted(key for key in {*old, *new} if old.get(key) != new.get(key)))


_ROLE_BINDING_TYPES = (
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
    "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
)


def _bindings_of(group: str, plan: Sequence[Resource]) -> list[str]:
    found = []
    for binding in (r for r in plan if r["type"] in _ROLE_BINDING_TYPES):
        inputs = binding.get("inputs", {})
        if any(s.get("kind") == "Group" and s.get("name") == group for s in inputs.get("subjects") or []):
            meta, ref = inputs.get("metadata", {}), inputs.get("roleRef", {})
            where = f"{meta['namespace']}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
            found.append(f"{binding['type'].rsplit(':', 1)[-1]} {where} -> {ref.get('kind')} {ref.get('name')}")
    return found


def _group_detail(
    old: dict[str, Any], new: dict[str, Any], old_plan: Sequence[Resource], new_plan: Sequence[Resource]
) -> tuple[str, ...]:
    """An access entry whose `kubernetesGroups` changed: the groups before and after, and what binds each group
    it gains (in the new plan) or loses (in the old one)."""
    before, after = old.get("kubernetesGroups") or [], new.get("kubernetesGroups") or []
    if before == after:
        return ()
    lines = [f"groups: {before} -> {after}"]
    for group in sorted({*before, *after} - ({*before} & {*after})):
        gained = group in after
        bindings = _bindings_of(group, new_plan if gained else old_plan) or ["no binding"]
        lines.append(f"{'+' if gained else '-'} {group}: {'; '.join(bindings)}")
    return tuple(lines)


def diff_plans(old_resources: Sequence[Resource], new_resources: Sequence[Resource]) -> Diff:
    old = {r["urn"]: r for r in expand(old_resources)}
    new = {r["urn"]: r for r in expand(new_resources)}
    matched: dict[str, str] = {}  # new urn -> old urn
    for urn, resource in new.items():
        if urn in old:
            matched[urn] = urn
        else:
            former = next((alias for alias in resource.get("aliases", []) if alias in old), None)
            if former is not None:
                matched[urn] = former
    kept_old = set(matched.values())
    added = [urn for urn in new if urn not in matched]
    removed = [urn for urn in old if urn not in kept_old]
    changed = []
    for urn, former in matched.items():
        inputs = _changed_inputs(old[former].get("inputs", {}), new[urn].get("inputs", {}))
        if inputs or former != urn:
            detail: tuple[str, ...] = ()
            if new[urn]["type"] == ENTRY_TYPE:
                detail = _group_detail(
                    old[former].get("inputs", {}), new[urn].get("inputs", {}), old_resources, new_resources
                )
            changed.append(Change(urn, inputs, former if former != urn else None, detail))
    collisions: list[Collision] = []
    removed_by_identity = {identity_of(old[urn]): urn for urn in removed}
    removed_by_identity.pop(None, None)
    claimed: dict[Identity, str] = {}
    for urn, resource in new.items():
        identity = identity_of(resource)
        if identity is None:
            continue
        if identity in claimed:
            collisions.append(Collision(identity, None, urn, other_new_urn=claimed[identity]))
        claimed[identity] = urn
        if urn in added and identity in removed_by_identity:
            collisions.append(Collision(identity, removed_by_identity[identity], urn))
    return Diff(added, removed, changed, collisions)


def render(diff: Diff, old_dir: str, new_dir: str) -> str:
    lines = [
        f"### offline.diff `{old_dir}` -> `{new_dir}`",
        "",
        f"{len(diff.added)} added, {len(diff.removed)} removed, {len(diff.changed)} changed, "
        f"**{len(diff.collisions)} collision(s)**",
    ]
    if diff.collisions:
        lines += ["", "#### Collisions (the create would fail or the access would be lost)", ""]
        lines += [f"- {c.describe()}" for c in diff.collisions]
        lines += [
            "",
            "Fix: keep the old logical name, give the new resource `aliases=[<old URN>]`, or make the change "
            "in two merges (remove, `up`, then add).",
        ]
    sections = (("Added", diff.added), ("Removed", diff.removed))
    for title, urns in sections:
        if urns:
            lines += ["", f"#### {title}", "", *(f"- `{urn}`" for urn in urns)]
    if diff.changed:
        lines += ["", "#### Changed", ""]
        for change in diff.changed:
            moved = f" (was `{change.former_urn}`, through its alias)" if change.former_urn else ""
            what = f": {', '.join(change.inputs)}" if change.inputs else ""
            lines.append(f"- `{change.urn}`{moved}{what}")
            lines += [f"  - {line}" for line in change.detail]
    return "\n".join(lines)


def _load(folder: str) -> list[Resource] | None:
    path = Path(folder) / "resources.json"
    if not path.is_file():
        return None
    return list(json.loads(path.read_text(encoding="utf-8")))


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m offline.diff OLD_DIR NEW_DIR  (each a `python synth.py --out` folder)", file=sys.stderr)
        return EXIT_NO_PLAN
    plans = [_load(folder) for folder in args]
    for folder, plan in zip(args, plans, strict=True):
        if plan is None:
            print(
                f"offline.diff: {folder}/resources.json not found; run `python synth.py --out {folder}`",
                file=sys.stderr,
            )
            return EXIT_NO_PLAN
    old, new = plans
    assert old is not None and new is not None
    diff = diff_plans(old, new)
    print("\n".join([render(diff, args[0], args[1]), *cost_section(args[0], args[1])]))
    return EXIT_COLLISION if diff.collisions else EXIT_SAFE


if __name__ == "__main__":
    sys.exit(main())
