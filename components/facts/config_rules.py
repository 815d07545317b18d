"""Checks on raw stack configuration that a field-by-field model cannot see.

`components/settings/` validates each value; this module catches what would otherwise be
dropped or misread before that: keys in a misspelled namespace, empty values, secrets where no
secret belongs, and settings that a switched-off feature would silently ignore. It also turns
pydantic's terse range and type errors into sentences using the model's own JSON schema, so
limits live in one place (the `Field` bounds). Pure: no Pulumi imports.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from components.facts.constants import PROJECT

# Config namespaces a stack may use besides the project's own: the providers this program
# creates (aws, kubernetes) and Pulumi's own keys (pulumi:tags, pulumi:template, ...).
PROVIDER_NAMESPACES = ("aws", "kubernetes", "pulumi")

# Keys that may hold a `secure:` value: only `labs`, for its hubs' login secrets (below). Every other
# gpu-platform key ends up in resource names, tags, or plain Kubernetes objects, in clear text.
SECRET_CAPABLE_KEYS: tuple[str, ...] = (f"{PROJECT}:labs",)
# The values inside those keys that may (and must) be secrets: a hub's passwords and OAuth client secret.
SECRET_PATH = re.compile(rf"{PROJECT}:labs\[[0-9]+\]\.hub\.auth\.(password|adminPassword|clientSecret)")


def may_be_secret(path: str) -> bool:
    """A `secure:` value may sit at `path`: a hub secret, or the whole `labs` key (the runtime marks the key)."""
    return path in SECRET_CAPABLE_KEYS or bool(SECRET_PATH.fullmatch(path))


EMPTY_VALUE = "empty value (nothing after the colon): give a value; an empty key is never read as its default"

Location = tuple[str | int, ...]


def _folded(word: str) -> str:
    """`min_size`, `min-size`, `MinSize` and `minSize` all fold to `minsize`."""
    return re.sub(r"[-_]", "", word).lower()


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The candidate nearest to `word` (a spelling hint), or None when nothing is close.

    The same word in another case or spelling (`min_size` for `minSize`) comes first, whatever difflib says."""
    candidates = list(candidates)
    same = next((c for c in candidates if _folded(c) == _folded(word)), None)
    if same is not None:
        return same
    matches = difflib.get_close_matches(word, candidates, n=1, cutoff=cutoff)
    return matches[0] if matches else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    hint = closest(word, candidates)
    if hint and hint != word and _folded(hint) == _folded(word):
        # snake_case or another spelling of a known key: keys are read by their camelCase name only.
        return f"; did you mean '{hint}'? (keys are spelled in camelCase, as in docs/configuration.md)"
    return f"; did you mean '{hint}'?" if hint else ""


def unknown_key_hint(key: str, known_keys: Iterable[str]) -> str:
    """A hint for an unknown `gpu-platform:` key: nesting mistakes first, then the closest spelling."""
    name = key.partition(":")[2]
    if name == PROJECT:
        return f"; write each key as '{PROJECT}:<key>' directly under config:, not as a nested '{PROJECT}:' block"
    top, separator, rest = name.partition(".")
    if separator and f"{PROJECT}:{top}" in known_keys:
        # `pulumi config set gpu-platform:cluster.x V` (no --path) writes one flat key with a dot in its name.
        return (
            f"; '{rest}' belongs inside the structured key '{PROJECT}:{top}' (under `{PROJECT}:{top}:` as "
            f"`{rest.split('.')[0]}:` in the stack file); set it with "
            f"`pulumi config set --path '{PROJECT}:{top}.{rest}' <value>` (without --path the CLI writes this flat key)"
        )
    by_name = {known.partition(":")[2]: known for known in known_keys}
    hint = closest(name, by_name)
    return did_you_mean(name, by_name).replace(f"'{hint}'", f"'{by_name[hint]}'", 1) if hint else ""


def namespace_problems(keys: Iterable[str], known_keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """Keys Pulumi would hand the program but nothing reads: a misspelled namespace or `aws:region`."""
    problems = []
    for key in sorted(keys):
        namespace, _, name = key.partition(":")
        if namespace == PROJECT:
            continue  # checked against the model (unknown gpu-platform keys)
        if namespace not in PROVIDER_NAMESPACES:
            problems.append(
                (
                    key,
                    f"unknown config namespace '{namespace}:' (nothing reads it); use '{PROJECT}:' for this "
                    f"project or one of {', '.join(n + ':' for n in PROVIDER_NAMESPACES)}{did_you_mean(key, known_keys)}",
                )
            )
        elif namespace == "aws" and name != "region" and closest(key, ["aws:region"], cutoff=0.85):
            problems.append((key, "unknown aws key (the provider ignores it); did you mean 'aws:region'?"))
    return problems


def null_locations(value: Any, location: Location) -> Iterator[Location]:
    """Every place inside a structured value that YAML left empty (`key:` with nothing after it)."""
    if value is None:
        yield location
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from null_locations(item, (*location, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from null_locations(item, (*location, index))


def secret_message(key: str) -> str:
    allowed = (
        "only a hub's auth.password, auth.adminPassword and auth.clientSecret under gpu-platform:labs may be secrets"
    )
    return (
        f"cannot be a secret ({allowed}: the value ends up in resource names, tags or Kubernetes objects "
        "in clear text); set it as plain text without 'secure:'"
    )


# --- settings a switched-off feature would drop -------------------------------------------------

# (block, switch key, switch default, value of the switch that turns the block's other keys off)
_SWITCHES: tuple[tuple[str, str, Any, Any], ...] = (
    ("karpenter", "enabled", True, False),
    ("gpuNodeGroup", "enabled", True, False),
    ("demo", "enabled", False, False),
)
# Keys of a block that only take effect while one switch of that block is on (the others stay valid).
_DEPENDENT_KEYS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "observability",
        "gpuMetrics",
        ("idleGpuThresholdPercent", "idleGpuHours", "stuckGpuNodeMinutes", "alarmSubscribers"),
    ),
)
_BOOL = TypeAdapter(bool)


def _as_bool(value: Any) -> bool | None:
    try:
        return _BOOL.validate_python(value)
    except ValidationError:
        return None  # the model reports the bad value


def _ignored_by_switch(values: Mapping[str, Any]) -> Iterator[tuple[Location, str]]:
    for block, switch, default, off in _SWITCHES:
        section = values.get(block)
        if not isinstance(section, dict) or _as_bool(section.get(switch, default)) != off:
            continue
        for key, value in section.items():
            if key != switch and value not in ([], {}):  # an empty list drops nothing
                yield (
                    (block, key),
                    f"ignored while {block}.{switch} is {str(off).lower()}; "
                    f"remove it or set {block}.{switch}: {str(not off).lower()}",
                )


def _ignored_without_switch(values: Mapping[str, Any]) -> Iterator[tuple[Location, str]]:
    for block, switch, keys in _DEPENDENT_KEYS:
        section = values.get(block)
        if not isinstance(section, dict) or _as_bool(section.get(switch, False)) is not False:
            continue
        for key in keys:
            if section.get(key) not in (None, [], {}):
                yield (block, key), f"ignored while {block}.{switch} is false; remove it or set {block}.{switch}: true"


def _ignored_pool_keys(pool: dict[str, Any], location: Location) -> Iterator[tuple[Location, str]]:
    yield from _ignored_sharing_keys(pool.get("gpuSharing"), (*location, "gpuSharing"))
    if pool.get("warmSlotShape") is not None and pool.get("warmGpuSlots", 0) == 0:
        yield (
            (*location, "warmSlotShape"),
            "ignored while warmGpuSlots is 0 (no warm slots); remove it or set warmGpuSlots",
        )


def _ignored_sharing_keys(sharing: Any, location: Location) -> Iterator[tuple[Location, str]]:
    if isinstance(sharing, dict) and sharing.get("strategy") == "none" and "failRequestsGreaterThanOne" in sharing:
        yield (
            (*location, "failRequestsGreaterThanOne"),
            "ignored with strategy 'none' (each pod gets a whole GPU); remove it",
        )


def ignored_settings(values: Mapping[str, Any]) -> list[tuple[Location, str]]:
    """Keys that are set but would have no effect: a contradiction, reported instead of dropped."""
    found = [*_ignored_by_switch(values), *_ignored_without_switch(values)]
    cluster = values.get("cluster")
    public = isinstance(cluster, dict) and _as_bool(cluster.get("endpointPublicAccess", False)) is not False
    if isinstance(cluster, dict) and cluster.get("publicAccessCidrs") and not public:
        found.append(
            (
                ("cluster", "publicAccessCidrs"),
                "ignored while cluster.endpointPublicAccess is false (the endpoint is private); "
                "remove it or set endpointPublicAccess: true",
            )
        )
    network = values.get("network")
    if isinstance(network, dict) and isinstance(network.get("existing"), dict):
        for key in ("vpcCidr", "availabilityZones", "natGateways"):
            if key in network:
                found.append(
                    (
                        ("network", key),
                        "ignored with network.existing (the existing VPC keeps its own layout); remove it",
                    )
                )
    found += _ignored_sharing_keys(values.get("gpuSharing"), ("gpuSharing",))
    karpenter = values.get("karpenter")
    pools = karpenter.get("nodePools") if isinstance(karpenter, dict) else None
    for index, pool in enumerate(pools if isinstance(pools, list) else []):
        if isinstance(pool, dict):
            found += _ignored_pool_keys(pool, ("karpenter", "nodePools", index))
    return found


# --- messages in words, from the model's JSON schema -----------------------------------------


@functools.cache
def _schema(model: type) -> dict[str, Any]:
    schema: dict[str, Any] = model.model_json_schema(by_alias=True)  # type: ignore[attr-defined]
    return schema


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:  # `X | None`: the non-null branch
            node = next((n for n in node["anyOf"] if n.get("type") != "null"), node["anyOf"][0])
        else:
            return node


def schema_at(model: type, location: Iterable[Any]) -> dict[str, Any] | None:
    """The JSON schema of the value at a pydantic error location (aliases, list indices)."""
    root = _schema(model)
    defs = root.get("$defs", {})
    node = _resolve(root, defs)
    for part in location:
        if part == "[key]":
            return {"type": "string"}
        if isinstance(part, int):
            nxt = node.get("items")
        elif "discriminator" in node:  # a tagged union: `part` names the member
            ref = node["discriminator"]["mapping"].get(part)
            nxt = {"$ref": ref} if ref else None
        else:
            nxt = node.get("properties", {}).get(part)
            if nxt is None and isinstance(node.get("additionalProperties"), dict):
                nxt = node["additionalProperties"]
        if nxt is None:
            return None
        node = _resolve(nxt, defs)
    return node


def range_words(schema: Mapping[str, Any] | None, got: Any) -> str | None:
    """'must be between 2 and 64 (got 0)' from a schema's bounds; None without bounds."""
    if not schema:
        return None
    bounds = (
        ("minimum", "maximum", ""),
        ("minItems", "maxItems", " item(s)"),
        ("minLength", "maxLength", " characters"),
    )
    for low_key, high_key, unit in bounds:
        low, high = schema.get(low_key), schema.get(high_key)
        shown = len(got) if unit and isinstance(got, list | tuple | str) else got
        if low is not None and high is not None:
            return f"must be between {low} and {high}{unit} (got {shown!r})"
        if low is not None:
            return f"must be at least {low}{unit} (got {shown!r})"
        if high is not None:
            return f"must be at most {high}{unit} (got {shown!r})"
    return None


def known_keys_at(schema: Mapping[str, Any] | None) -> list[str]:
    return list((schema or {}).get("properties", {}))
