"""`SettingsError` and its wording: every problem as `(key path, what is allowed)`, the key path spelled as in
the stack file (`gpu-platform:karpenter.nodePools[0].warmGpuSlots`), pydantic's messages said in words.

The words come from the model's own JSON schema (its `Field` bounds, choices and keys), so limits live in one place.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from components.facts.constants import PROJECT

REGION_KEY = "aws:region"
NAMESPACE = f"{PROJECT}:"


class SettingsError(Exception):
    """A user mistake in stack configuration: one `(key path, what is allowed)` pair per problem."""

    def __init__(self, problems: list[tuple[str, str]]):
        self.problems = problems
        super().__init__(self.render())

    def render(self) -> str:
        lines = [f"invalid stack configuration ({len(self.problems)} problem(s)):"]
        lines += [f"  {path}: {message}" for path, message in self.problems]
        return "\n".join(lines)


def problems_from(exc: ValidationError, root: type[BaseModel]) -> list[tuple[str, str]]:
    """One `(key path, what is allowed)` per pydantic error; `root` is the model the paths start at."""
    problems = []
    for error in exc.errors(include_url=False):
        # `schema_location` keeps a tagged union's member (the schema needs it); the key path drops it.
        schema_location = list(error["loc"])
        message = _key_folded_into(error["msg"].removeprefix("Value error, "), schema_location)
        if error["type"] in _UNION_TAG_ERRORS:
            # pydantic names the union's own key (`hub.auth`); the mistake is in its discriminator (`auth.type`).
            union = schema_at(root, schema_location) or {}
            schema_location.append(union.get("discriminator", {}).get("propertyName", "type"))
        location = _without_union_tags(schema_location, root)
        problems.append((key_path(location), _with_allowed(error, message, schema_location, root)))
    return without_respelled_missing(problems)


def check_problem(error: ValueError, root: type[BaseModel]) -> tuple[str, str]:
    """A check across sections (`components/settings/checks/`) as `(key path, what is allowed)`."""
    location: list[Any] = []
    message = _key_folded_into(str(error), location)
    return key_path(_without_union_tags(location, root)), message


def _key_folded_into(message: str, location: list[Any]) -> str:
    """A check names its own key as "<key path>: ..."; fold that key into `location` and return the rest."""
    head, sep, rest = message.partition(": ")
    if not (sep and re.fullmatch(r"[a-zA-Z][\w.\[\]]*", head)):
        return message
    # `labs.0.members` and `adminPrincipalArns[0]` both name a list element.
    location += [
        int(index or key) if (index or key).isdigit() else key for key, index in re.findall(r"(\w+)|\[(\d+)\]", head)
    ]
    return rest


def without_respelled_missing(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """`gpuSlots: required` next to `gpu_slots: unknown key; did you mean 'gpuSlots'?` says one thing twice."""
    hinted = set()
    for path, message in problems:
        found = re.match(r"unknown key; did you mean '([^']+)'\? \(keys are spelled in camelCase", message)
        if found:
            parent, dot, _ = path.rpartition(".")
            hinted.add(f"{parent}{dot}{found.group(1)}" if dot else found.group(1))
    return [(path, message) for path, message in problems if not (message == "required" and path in hinted)]


def _without_union_tags(location: list[Any], root: type[BaseModel]) -> list[Any]:
    """pydantic names the chosen member of a tagged union (`auth.sharedPassword.password`): not a config key.

    Any tagged union of the model, found in its JSON schema (a `discriminator`), so new unions need no entry here."""
    kept = []
    for i, part in enumerate(location):
        parent = schema_at(root, location[:i]) if i else None
        if not (parent and part in parent.get("discriminator", {}).get("mapping", {})):
            kept.append(part)
    return kept


_UNION_TAG_ERRORS = ("union_tag_invalid", "union_tag_not_found")


def _union_tag_words(kind: str, got: Any, union: dict[str, Any]) -> str:
    """'must be one of ...' for a tagged union's discriminator, with the closest tag when one is near."""
    tags = list(union.get("discriminator", {}).get("mapping", {}))
    allowed = ", ".join(f"'{tag}'" for tag in tags)
    if kind == "union_tag_not_found":
        return f"required: one of {allowed}"
    # A lower cutoff than for keys: the tags are few, and any near one is a better start than the list alone.
    hint = closest(str(got), tags, cutoff=0.3)
    return f"must be one of {allowed} (got {got!r}" + (f"; did you mean '{hint}'?)" if hint else ")")


_TYPE_WORDS = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "list_type": "must be a list, e.g. [a, b]",
    "dict_type": "must be a mapping of keys to values",
    "model_type": "must be a mapping of keys to values",
    "model_attributes_type": "must be a mapping of keys to values",
}
_RANGE_ERRORS = (
    "greater_than_equal", "less_than_equal", "greater_than", "less_than", "too_short", "too_long",
    "string_too_short", "string_too_long",
)  # fmt: skip


def _with_allowed(error: Any, message: str, location: list[Any], root: type[BaseModel]) -> str:
    ctx = error.get("ctx") or {}
    kind, got = error["type"], error.get("input")
    if kind in _UNION_TAG_ERRORS:
        return _union_tag_words(kind, ctx.get("tag"), schema_at(root, location[:-1]) or {})
    if kind == "literal_error" and "expected" in ctx:
        choices = re.findall(r"'([^']*)'", ctx["expected"])
        by_case = {choice.lower(): choice for choice in choices}
        hint = by_case.get(str(got).lower()) or closest(str(got), choices)
        return f"must be {ctx['expected']} (got {got!r}" + (f"; did you mean '{hint}'?)" if hint else ")")
    if kind == "extra_forbidden":
        known = known_keys_at(schema_at(root, location[:-1]))
        hint = did_you_mean(str(location[-1]), known)
        return f"unknown key{hint}; allowed here: {', '.join(known)}"
    if kind == "missing":
        return "required"
    if kind in _RANGE_ERRORS:
        return range_words(schema_at(root, location), got) or message
    if kind == "string_type" and isinstance(got, int | float):
        return f'must be text, and YAML read {got!r} as a number or boolean: quote the value, e.g. "{got}"'
    if kind == "string_type":
        return f"must be text, not a {'list' if isinstance(got, list) else 'mapping'} (got {got!r})"
    if kind in _TYPE_WORDS:
        return f"{_TYPE_WORDS[kind]} (got {got!r})"
    return message


def key_path(location: list[Any]) -> str:
    """A pydantic location as the stack file key it names: `gpu-platform:labs[0].hub["odd key"]`."""
    if not location:
        return f"{NAMESPACE}<stack>"
    head, rest = location[0], location[1:]
    path = REGION_KEY if head == "region" else f"{NAMESPACE}{head}"
    for part in rest:
        if part == "[key]":  # pydantic's marker for "the key of this map entry"
            continue
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][\w-]*", str(part)):
            path += f".{part}"
        else:
            path += f"[{json.dumps(part)}]"
    return path


# --- spelling hints and the JSON schema's words --------------------------------------------------


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
        return f"; write each key as '{NAMESPACE}<key>' directly under config:, not as a nested '{NAMESPACE}' block"
    top, separator, rest = name.partition(".")
    if separator and f"{NAMESPACE}{top}" in known_keys:
        # `pulumi config set gpu-platform:cluster.x V` (no --path) writes one flat key with a dot in its name.
        return (
            f"; '{rest}' belongs inside the structured key '{NAMESPACE}{top}' (under `{NAMESPACE}{top}:` as "
            f"`{rest.split('.')[0]}:` in the stack file); set it with "
            f"`pulumi config set --path '{NAMESPACE}{top}.{rest}' <value>` (without --path the CLI writes this flat key)"
        )
    by_name = {known.partition(":")[2]: known for known in known_keys}
    hint = closest(name, by_name)
    return did_you_mean(name, by_name).replace(f"'{hint}'", f"'{by_name[hint]}'", 1) if hint else ""


@functools.cache
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema(by_alias=True)


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    while True:
        if "$ref" in node:
            node = defs[node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:  # `X | None`: the non-null branch
            node = next((n for n in node["anyOf"] if n.get("type") != "null"), node["anyOf"][0])
        else:
            return node


def schema_at(model: type[BaseModel], location: Iterable[Any]) -> dict[str, Any] | None:
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
