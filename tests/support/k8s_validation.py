"""Offline checks for core Kubernetes objects: strict schema validation (all errors) and the semantics no schema knows.

`validate_core_object` uses kubernetes-validate's bundled strict schemas (unknown fields rejected),
but reports every error instead of the first one (docs/validation.md, core objects): it loads the kind's
schema and `_definitions.json` into a `referencing.Registry` and iterates a Draft 2020-12 validator.
A kind without a bundled schema (a custom resource) raises - never passes silently.

The semantic helpers follow the Kubernetes rules for tolerations, node selector terms and pod
volumes; tests use them to prove placement and wiring.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
from kubernetes_validate import utils as kv_utils
from packaging.version import Version
from referencing import Registry, Resource

from components.renderers.manifest_helpers import CHECKOV_SKIP_ANNOTATION_PREFIX

SCHEMA_DIR = "kubernetes-json-schema"


class SchemaNotFoundError(LookupError):
    """No bundled schema for this apiVersion/kind: route custom resources to their CRD validator."""


def bundled_schema_version(kubernetes_version: str) -> str:
    """Newest bundled schema version not newer than `kubernetes_version` (e.g. "1.35" -> "1.35.0").

    Refuses a version newer than every bundled schema: validating against an older API would
    accept fields the real server rejects and miss new ones.
    """
    wanted = Version(kubernetes_version)
    versions = sorted((Version(v) for v in kv_utils.all_versions()), reverse=True)
    newest = versions[0]
    if (wanted.major, wanted.minor) > (newest.major, newest.minor):
        raise ValueError(
            f"kubernetes-validate {kubernetes_validate.__version__} bundles schemas up to {newest}, "
            f"not {kubernetes_version}"
        )
    for version in versions:
        if (version.major, version.minor) <= (wanted.major, wanted.minor):
            return str(version)
    raise ValueError(f"no bundled schema is as old as {kubernetes_version} (oldest: {versions[-1]})")


@cache
def _validator(schema_version: str, api_version: str, kind: str) -> jsonschema.Draft202012Validator:
    schema_dir = f"{SCHEMA_DIR}/v{schema_version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(f"{schema_dir}/{kind.lower()}-{group_version}.json", schema_version)
    except FileNotFoundError:
        raise SchemaNotFoundError(f"no bundled schema for {api_version} {kind} (Kubernetes {schema_version})") from None
    definitions = kv_utils.schema_contents(f"{schema_dir}/_definitions.json", schema_version)
    registry: Registry = Registry().with_resources(
        [(schema["$id"], Resource.from_contents(schema)), (definitions["$id"], Resource.from_contents(definitions))]
    )
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validate_core_object(obj: dict[str, Any], kubernetes_version: str) -> list[str]:
    """Every strict-schema error of one core object, as "<kind>/<name> <path>: <message>"; [] when valid."""
    validator = _validator(bundled_schema_version(kubernetes_version), obj["apiVersion"], obj["kind"])
    name = f"{obj['kind']}/{obj.get('metadata', {}).get('name', '?')}"
    errors = sorted(validator.iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{name} {'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}" for error in errors]


# --- semantics ---------------------------------------------------------------------------------


def tolerates(toleration: dict[str, Any], taint: dict[str, str]) -> bool:
    """Whether one toleration tolerates one taint (k8s.io/api core/v1 Toleration.ToleratesTaint)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key", "") != taint["key"] and toleration.get("key"):
        return False
    if not toleration.get("key") and toleration.get("operator") != "Exists":
        return False  # an empty key is only valid with Exists (matches every taint)
    operator = toleration.get("operator", "Equal")
    if operator == "Exists":
        return True
    if operator == "Equal":
        return toleration.get("value", "") == taint.get("value", "")
    raise ValueError(f"unknown toleration operator {operator!r}")


def _expression_matches(expression: dict[str, Any], labels: dict[str, str]) -> bool:
    key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    if operator in ("Gt", "Lt"):
        if key not in labels:
            return False
        label, bound = int(labels[key]), int(values[0])
        return label > bound if operator == "Gt" else label < bound
    raise ValueError(f"unknown node selector operator {operator!r}")


def node_selector_terms_match(terms: list[dict[str, Any]], labels: dict[str, str]) -> bool:
    """Terms are ORed; the expressions of one term are ANDed; an empty term matches nothing."""
    if any("matchFields" in term for term in terms):
        raise ValueError("matchFields needs node fields, not labels")
    return any(
        term.get("matchExpressions") and all(_expression_matches(e, labels) for e in term["matchExpressions"])
        for term in terms
    )


def pod_can_land_on(pod_spec: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a node with `labels` passes the pod's nodeSelector and required node affinity."""
    if any(labels.get(key) != value for key, value in pod_spec.get("nodeSelector", {}).items()):
        return False
    required = (
        pod_spec.get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    return required is None or node_selector_terms_match(required["nodeSelectorTerms"], labels)


def containers_of(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod_spec.get("initContainers", []), *pod_spec["containers"]]


def unmounted_volume_problems(pod_spec: dict[str, Any]) -> list[str]:
    """Mounts naming no volume, duplicate volume names, volumes nobody mounts."""
    volumes = [v["name"] for v in pod_spec.get("volumes", [])]
    problems = [f"volume {n!r} is defined twice" for n in sorted(set(volumes)) if volumes.count(n) > 1]
    mounted = set()
    for container in containers_of(pod_spec):
        for mount in container.get("volumeMounts", []):
            mounted.add(mount["name"])
            if mount["name"] not in volumes:
                problems.append(f"container {container['name']!r} mounts unknown volume {mount['name']!r}")
    problems += [f"volume {n!r} is not mounted by any container" for n in volumes if n not in mounted]
    return problems


def selector_problems(workload: dict[str, Any]) -> list[str]:
    """A Deployment/DaemonSet selector must select its own pod template (the API server checks it; offline we do)."""
    spec = workload["spec"]
    selector = spec["selector"]
    if set(selector) - {"matchLabels"}:
        raise ValueError("only matchLabels selectors are supported here")
    labels = spec["template"]["metadata"].get("labels", {})
    return [
        f"selector {key}={value} does not match template label {labels.get(key)!r}"
        for key, value in selector["matchLabels"].items()
        if labels.get(key) != value
    ] or ([] if selector["matchLabels"] else ["empty selector"])


# --- NetworkPolicies and checkov skips --------------------------------------------------------------------


def selects(policy: dict[str, Any], pod_labels: dict[str, str]) -> bool:
    """Whether a NetworkPolicy's podSelector (matchLabels only, as rendered here) selects pods with these labels."""
    selector = policy["spec"]["podSelector"]
    if set(selector) - {"matchLabels"}:
        raise ValueError("only matchLabels pod selectors are supported here")
    return all(pod_labels.get(key) == value for key, value in selector.get("matchLabels", {}).items())


def deny_all_problems(policy: dict[str, Any], workload: dict[str, Any]) -> list[str]:
    """Why `policy` is not a deny-all policy for exactly `workload`'s pods ([] when it is).

    It must live in the workload's namespace, select its pod template (matchLabels a subset of the template's
    labels) but nothing its controller does not own (the workload's own selector, not a broader one), and
    govern both directions without a single rule.
    """
    name = f"{policy['metadata']['name']} for {workload['kind']}/{workload['metadata']['name']}"
    spec = policy["spec"]
    problems = []
    if policy["metadata"]["namespace"] != workload["metadata"]["namespace"]:
        problems.append(f"{name}: in another namespace")
    match_labels = spec["podSelector"].get("matchLabels", {})
    if not match_labels:
        problems.append(f"{name}: selects every pod of the namespace")
    if not selects(policy, workload["spec"]["template"]["metadata"]["labels"]):
        problems.append(f"{name}: does not select the workload's pods")
    if match_labels != workload["spec"]["selector"]["matchLabels"]:
        problems.append(f"{name}: selector {match_labels} is not the workload's own")
    if sorted(spec.get("policyTypes", [])) != ["Egress", "Ingress"]:
        problems.append(f"{name}: policyTypes {spec.get('policyTypes')} leave a direction open")
    if spec.get("ingress") or spec.get("egress"):
        problems.append(f"{name}: allows some traffic")
    return problems


def skip_reasons(obj: dict[str, Any]) -> dict[str, str]:
    """checkov skips on the object itself (check id -> reason), checking the annotations are numbered 1..n."""
    annotations = obj["metadata"].get("annotations", {})
    skips = {k: v for k, v in annotations.items() if k.startswith(CHECKOV_SKIP_ANNOTATION_PREFIX)}
    assert sorted(skips) == sorted(f"{CHECKOV_SKIP_ANNOTATION_PREFIX}{n}" for n in range(1, len(skips) + 1))
    checks = [value.partition("=") for value in skips.values()]
    return {check: reason for check, _, reason in checks}
