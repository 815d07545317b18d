"""Reading Pulumi configuration: the flat string map Pulumi hands a program, validated into `StackSettings`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel

from components.facts import config_rules
from components.settings.checks.sections import check_stack
from components.settings.errors import (
    NAMESPACE,
    REGION_KEY,
    SettingsError,
    check_problem,
    key_path,
    problems_from,
    without_respelled_missing,
)
from components.settings.hub import HUB_SECRET_FIELDS, REDACTED_SECRET
from components.settings.stack import StackSettings


def config_key(field_name: str) -> str:
    """`cluster_name` -> `gpu-platform:clusterName` (the stack YAML key)."""
    return NAMESPACE + to_camel(field_name)


def allowed_config_keys() -> tuple[str, ...]:
    return tuple(config_key(name) for name in StackSettings.model_fields if name != "region")


def _is_structured(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, dict):
        return True
    if origin is Annotated:
        return _is_structured(get_args(annotation)[0])
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def load_settings(raw_config: Mapping[str, str], secret_keys: Iterable[str] = ()) -> StackSettings:
    """Validate Pulumi's flat string config map (`namespace:key` -> string) into `StackSettings`.

    Structured values arrive as JSON text, as `pulumi.Config.require_object` reads them.
    `secret_keys` are the keys (or deeper key paths) given as `secure:` values.
    Raises `SettingsError` naming every bad key; never registers or touches anything.
    """
    allowed = allowed_config_keys()
    problems = config_rules.namespace_problems(raw_config, (REGION_KEY, *allowed))
    for key in sorted(raw_config):
        if key.startswith(NAMESPACE) and key not in allowed:
            hint = config_rules.unknown_key_hint(key, (*allowed, REGION_KEY))
            problems.append((key, f"unknown key{hint}; allowed: {', '.join(allowed)}"))
    secrets = set(secret_keys)
    for path in sorted(secrets):
        if (path.startswith(NAMESPACE) or path == REGION_KEY) and not config_rules.may_be_secret(path):
            problems.append((path, config_rules.secret_message(path)))
    values = _raw_values(raw_config, problems)
    for location, message in config_rules.ignored_settings(values):
        problems.append((key_path(list(location)), message))
    try:
        # By alias only: `populate_by_name` lets the program build models by field name, but a stack file's
        # snake_case spelling (`min_size`) is an unknown key, reported with its camelCase name.
        settings = StackSettings.model_validate(values, by_alias=True, by_name=False)
    except ValidationError as exc:
        # A key already reported (empty, secret, ignored) is not reported again by the model.
        reported = [path for path, _ in problems]
        problems += [p for p in problems_from(exc, StackSettings) if not any(_covers(r, p[0]) for r in reported)]
    else:
        problems += _checked(settings, secrets, [path for path, _ in problems])
    if problems:
        raise SettingsError(without_respelled_missing(problems))
    return settings


def _checked(settings: StackSettings, secrets: set[str], reported: list[str]) -> list[tuple[str, str]]:
    """The checks across sections on a model whose sections are each valid (the first that fails is the one
    reported, unless its key was reported already), else the hub secrets given in clear text."""
    try:
        check_stack(settings)
    except ValueError as error:
        problem = check_problem(error, StackSettings)
        return [] if any(_covers(r, problem[0]) for r in reported) else [problem]
    return _clear_text_hub_secrets(settings, secrets)


def _clear_text_hub_secrets(settings: StackSettings, secret_keys: set[str]) -> list[tuple[str, str]]:
    """Hub passwords and client secrets given in clear text (Pulumi marks a whole key secret at runtime)."""
    labs_key = config_key("labs")
    if labs_key in secret_keys:
        return []
    problems = []
    for index, lab in enumerate(settings.labs):
        auth = lab.hub.auth.model_dump(by_alias=True) if lab.hub else {}
        for field in HUB_SECRET_FIELDS:
            path = f"{labs_key}[{index}].hub.auth.{field}"
            # A `secure:` value read offline without its key is the redacted placeholder: it was a secret.
            if auth.get(field) not in (None, REDACTED_SECRET) and path not in secret_keys:
                problems.append(
                    (path, f"must be a secret: pulumi config set --secret --path '{path}' <value> (writes secure:)")
                )
    return problems


def _covers(reported: str, path: str) -> bool:
    return path == reported or path.startswith((reported + ".", reported + "["))


def _raw_values(raw_config: Mapping[str, str], problems: list[tuple[str, str]]) -> dict[str, Any]:
    """Model input by alias: scalars as text, structured keys parsed; empty values become problems."""
    values: dict[str, Any] = {}
    for name, field in StackSettings.model_fields.items():
        key = REGION_KEY if name == "region" else config_key(name)
        if key not in raw_config:
            continue
        text = raw_config[key]
        # `key:` with nothing after it: the CLI hands over an empty or JSON-null value, never a name.
        if text.strip() in ("", "null"):
            problems.append((key, config_rules.EMPTY_VALUE))
        elif not _is_structured(field.annotation):
            values[to_camel(name)] = text
        else:
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                problems.append((key, "must be a structured value (a YAML mapping or list), see docs/configuration.md"))
                continue
            values[to_camel(name)] = value
            for location in config_rules.null_locations(value, (to_camel(name),)):
                problems.append((key_path(list(location)), config_rules.EMPTY_VALUE))
    return values
