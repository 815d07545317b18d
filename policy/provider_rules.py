"""Hold every `aws:*` input of a plan to the AWS provider's own validators (components.facts.aws_rules.table).

Pure functions over a plan (`resources.json`'s objects), shared by the synth (which exits 1 on a violation),
`python -m policy.check DIR` and the policy pack. pulumi-eks's children are derived from its components'
inputs (policy.eks_children) and held to the same table. Without pulumi_policy imports: the synth runs it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from components.facts.aws_rules.table import MAP_INPUTS, TABLE, rule_for
from components.facts.aws_rules.validators import problems
from policy.eks_children import EKS_CLUSTER_COMPONENT, children

RULE_NAME = "aws-provider-rules"


def mock_ids(resources: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The mocks' stand-ins for IDs the engine learns only at create (offline/mocks.py: `<logical name>-id`).

    Such a value is unknown at preview, when the provider skips its validators, so the check skips it too.
    """
    return frozenset(f"{r['name']}-id" for r in resources)


def _is_list(value: Any) -> bool:
    """A list, or the policy SDK's read-only list proxy (a Sequence)."""
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))


def input_values(value: Any, path: str = "") -> Iterator[tuple[str, str | None, Any]]:
    """(path, map key or None, value) for every string and number leaf; map keys read `*` in the path."""
    if isinstance(value, Mapping):
        is_map = path.rsplit(".", 1)[-1] in MAP_INPUTS
        for key, item in value.items():
            child = f"{path}.{'*' if is_map else key}" if path else key
            if is_map and not isinstance(item, Mapping) and not _is_list(item):
                yield child, key, item
            else:
                yield from input_values(item, child)
    elif _is_list(value):
        for item in value:
            yield from input_values(item, f"{path}[]")
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield path, None, value


def resource_violations(
    resource_type: str, inputs: Mapping[str, Any], unknown: frozenset[str] = frozenset()
) -> list[str]:
    """One message per value that breaks a provider rule: the input path, the value, the rule and its source.

    Values in `unknown` (the mocks' IDs of resources not created yet) are skipped, as the provider skips them.
    """
    if not resource_type.startswith("aws:"):
        return []
    found = []
    for path, key, value in input_values(inputs):
        entry = rule_for(resource_type, path)
        if entry is None or value in unknown:
            continue
        shown = f"{path.removesuffix('*')}{key}" if key is not None else path
        found += [
            f"{shown} = {value!r}" + (f" (key {key!r})" if key is not None and broken.startswith("key ") else "")
            + f": breaks '{broken}' [{entry.source}]"
            for broken in problems(entry, value, key)
        ]  # fmt: skip
    return found


def coverage_gaps(resource_type: str, inputs: Mapping[str, Any]) -> list[str]:
    """Input paths of an `aws:*` resource that set a string or number and have no table entry."""
    if not resource_type.startswith("aws:"):
        return []
    return sorted({path for path, _, _ in input_values(inputs) if rule_for(resource_type, path) is None})


def provider_children(resources: Sequence[Mapping[str, Any]]) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
    """(component urn, child type, child logical name, child inputs) for every pulumi-eks child of the plan."""
    names_by_urn = {r["urn"]: r["inputs"].get("name") for r in resources if r["type"] == EKS_CLUSTER_COMPONENT}
    for resource in resources:
        for child_type, child_name, inputs in children(resource, names_by_urn):
            yield resource["urn"], child_type, child_name, {k: v for k, v in inputs.items() if v is not None}


def plan_violations(resources: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(urn, message) for every provider-rule violation of the plan, pulumi-eks's children included."""
    unknown = mock_ids(resources)
    found = [(r["urn"], m) for r in resources for m in resource_violations(r["type"], r["inputs"], unknown)]
    for urn, child_type, child_name, inputs in provider_children(resources):
        where = f"{urn} -> {child_type}::{child_name} (pulumi-eks child)"
        found += [(where, message) for message in resource_violations(child_type, inputs, unknown)]
    return found


def provider_rule_types() -> tuple[str, ...]:
    """The resource types the table has entries for (tags hold for every aws:* type besides)."""
    return tuple(sorted({resource_type for resource_type, _ in TABLE}))
