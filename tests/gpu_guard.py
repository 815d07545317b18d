"""The GPU admission guard evaluated offline, as the kube-apiserver admits a pod (shared test helper).

`evaluate` applies the policy's and the binding's namespace selectors, then runs every validation's CEL
(common-expression-language) with the variables a ValidatingAdmissionPolicy sees: `object`, `oldObject`,
`request` and `namespaceObject`, plus the policy's own `variables` in order.
"""

from __future__ import annotations

import copy
from typing import Any

import cel
from cel.stdlib import add_stdlib_to_context

from components.renderers.gpu_admission_policy import admission_objects, admission_policy


def with_name_label(namespace: dict[str, Any]) -> dict[str, Any]:
    """The apiserver labels every namespace with its own name (kubernetes.io/metadata.name)."""
    ns = copy.deepcopy(namespace)
    ns["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = ns["metadata"]["name"]
    return ns


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    for expression in selector.get("matchExpressions", []):
        present = expression["key"] in labels and labels[expression["key"]] in expression["values"]
        if (expression["operator"] == "In") != present:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _context(variables: dict[str, Any]) -> cel.Context:
    context = cel.Context(variables=variables)
    add_stdlib_to_context(context)
    return context


def evaluate(
    obj: dict[str, Any],
    namespace_object: dict[str, Any],
    operation: str = "CREATE",
    policy: dict[str, Any] | None = None,
) -> list[str]:
    """Denial messages for `obj` (a pod, or a workload with its policy) in that namespace (empty: admitted)."""
    ns = with_name_label(namespace_object)
    namespace = ns["metadata"]["name"]
    labels = ns["metadata"]["labels"]
    policy = policy or admission_policy()
    binding = next(o for o in admission_objects() if o["spec"].get("policyName") == policy["metadata"]["name"])
    if not selector_matches(policy["spec"]["matchConstraints"]["namespaceSelector"], labels):
        return []
    if not selector_matches(binding["spec"]["matchResources"]["namespaceSelector"], labels):
        return []
    obj = {**obj, "metadata": {**obj.get("metadata", {}), "namespace": namespace}}
    variables = {
        "object": obj,
        "oldObject": obj if operation == "UPDATE" else None,
        "request": {"operation": operation, "namespace": namespace},
        "namespaceObject": ns,
    }
    # VAP variables are evaluated in order, each seeing the ones before it.
    computed: dict[str, Any] = {}
    for variable in policy["spec"]["variables"]:
        computed[variable["name"]] = cel.compile(variable["expression"]).execute(
            _context({**variables, "variables": computed})
        )
    denied = []
    for validation in policy["spec"]["validations"]:
        context = _context({**variables, "variables": computed})
        if cel.compile(validation["expression"]).execute(context) is not True:
            denied.append(validation["message"])
    return denied
