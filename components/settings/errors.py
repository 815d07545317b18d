"""`SettingsError` and its wording: every problem as `(key path, what is allowed)`, the key path spelled as in
the stack file (`gpu-platform:karpenter.nodePools[0].warmGpuSlots`), pydantic's messages said in words."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from components.facts import config_rules
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
        message = _folded(error["msg"].removeprefix("Value error, "), schema_location)
        if error["type"] in _UNION_TAG_ERRORS:
            # pydantic names the union's own key (`hub.auth`); the mistake is in its discriminator (`auth.type`).
            union = config_rules.schema_at(root, schema_location) or {}
            schema_location.append(union.get("discriminator", {}).get("propertyName", "type"))
        location = _without_union_tags(schema_location, root)
        problems.append((key_path(location), _with_allowed(error, message, schema_location, root)))
    return without_respelled_missing(problems)


def check_problem(error: ValueError, root: type[BaseModel]) -> tuple[str, str]:
    """A check across sections (`components/settings/checks/`) as `(key path, what is allowed)`."""
    location: list[Any] = []
    message = _folded(str(error), location)
    return key_path(_without_union_tags(location, root)), message


def _folded(message: str, location: list[Any]) -> str:
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
        parent = config_rules.schema_at(root, location[:i]) if i else None
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
    hint = config_rules.closest(str(got), tags, cutoff=0.3)
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
        return _union_tag_words(kind, ctx.get("tag"), config_rules.schema_at(root, location[:-1]) or {})
    if kind == "literal_error" and "expected" in ctx:
        choices = re.findall(r"'([^']*)'", ctx["expected"])
        by_case = {choice.lower(): choice for choice in choices}
        hint = by_case.get(str(got).lower()) or config_rules.closest(str(got), choices)
        return f"must be {ctx['expected']} (got {got!r}" + (f"; did you mean '{hint}'?)" if hint else ")")
    if kind == "extra_forbidden":
        known = config_rules.known_keys_at(config_rules.schema_at(root, location[:-1]))
        hint = config_rules.did_you_mean(str(location[-1]), known)
        return f"unknown key{hint}; allowed here: {', '.join(known)}"
    if kind == "missing":
        return "required"
    if kind in _RANGE_ERRORS:
        return config_rules.range_words(config_rules.schema_at(root, location), got) or message
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
