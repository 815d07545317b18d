"""The config front door: Pulumi's flat string map, checked and validated into `StackSettings`.

Before the models see a value, it reports what they would drop or misread: misspelled namespaces, unknown keys,
empty values, misplaced secrets, and settings a switched-off feature would ignore (which keys hang on which
switch, and its default, are read from the models' fields: `model_fields`, `IgnoredUnless`). `errors.py` words it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, TypeGuard, get_args, get_origin

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from components.facts.constants import PROJECT
from components.settings.checks.sections import check_stack
from components.settings.cluster import ClusterSettings, NetworkSettings
from components.settings.errors import (
    NAMESPACE,
    REGION_KEY,
    SettingsError,
    check_problem,
    closest,
    did_you_mean,
    key_path,
    problems_from,
    unknown_key_hint,
    without_respelled_missing,
)
from components.settings.fields import IgnoredUnless
from components.settings.gpu import GpuSharingSettings
from components.settings.hub import HUB_SECRET_FIELDS, REDACTED_SECRET
from components.settings.karpenter import NodePoolSettings
from components.settings.stack import StackSettings

# Config namespaces a stack may use besides the project's own: the providers this program creates (aws,
# kubernetes) and Pulumi's own keys (pulumi:tags, pulumi:template, ...). Pulumi's, not a model's: nothing to derive.
PROVIDER_NAMESPACES = ("aws", "kubernetes", "pulumi")
EMPTY_VALUE = "empty value (nothing after the colon): give a value; an empty key is never read as its default"
# The switch that turns a whole section off (`karpenter`, `gpuNodeGroup`, `demo`): its other keys then do nothing.
SECTION_SWITCH = "enabled"

Location = tuple[str | int, ...]


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
    problems = namespace_problems(raw_config, (REGION_KEY, *allowed))
    for key in sorted(raw_config):
        if key.startswith(NAMESPACE) and key not in allowed:
            hint = unknown_key_hint(key, (*allowed, REGION_KEY))
            problems.append((key, f"unknown key{hint}; allowed: {', '.join(allowed)}"))
    secrets = set(secret_keys)
    for path in sorted(secrets):
        if (path.startswith(NAMESPACE) or path == REGION_KEY) and not may_be_secret(path):
            problems.append((path, secret_message()))
    values = _raw_values(raw_config, problems)
    for location, message in ignored_settings(values):
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
            problems.append((key, EMPTY_VALUE))
        elif not _is_structured(field.annotation):
            values[to_camel(name)] = text
        else:
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                problems.append((key, "must be a structured value (a YAML mapping or list), see docs/configuration.md"))
                continue
            values[to_camel(name)] = value
            for location in null_locations(value, (to_camel(name),)):
                problems.append((key_path(list(location)), EMPTY_VALUE))
    return values


def namespace_problems(keys: Iterable[str], known_keys: tuple[str, ...]) -> list[tuple[str, str]]:
    """Keys Pulumi would hand the program but nothing reads: a misspelled namespace or `aws:region`."""
    problems = []
    for key in sorted(keys):
        namespace = key.partition(":")[0]
        if namespace == PROJECT:
            continue  # checked against the model (unknown gpu-platform keys)
        if namespace not in PROVIDER_NAMESPACES:
            problems.append(
                (
                    key,
                    f"unknown config namespace '{namespace}:' (nothing reads it); use '{NAMESPACE}' for this "
                    f"project or one of {', '.join(n + ':' for n in PROVIDER_NAMESPACES)}{did_you_mean(key, known_keys)}",
                )
            )
        elif namespace == "aws" and key != REGION_KEY and closest(key, [REGION_KEY], cutoff=0.85):
            problems.append((key, f"unknown aws key (the provider ignores it); did you mean '{REGION_KEY}'?"))
    return problems


@functools.cache
def _secret_path() -> re.Pattern[str]:
    """The values that may (and must) be secrets: a hub's passwords and OAuth client secret (`HUB_SECRET_FIELDS`)."""
    return re.compile(rf"{re.escape(config_key('labs'))}\[[0-9]+\]\.hub\.auth\.({'|'.join(HUB_SECRET_FIELDS)})")


def may_be_secret(path: str) -> bool:
    """A `secure:` value may sit at `path`: a hub secret, or the whole `labs` key (the runtime marks the key).

    Every other key ends up in resource names, tags, or plain Kubernetes objects, in clear text."""
    return path == config_key("labs") or bool(_secret_path().fullmatch(path))


def secret_message() -> str:
    *first, last = (f"auth.{field}" for field in HUB_SECRET_FIELDS)
    allowed = f"only a hub's {', '.join(first)} and {last} under {config_key('labs')} may be secrets"
    return (
        f"cannot be a secret ({allowed}: the value ends up in resource names, tags or Kubernetes objects "
        "in clear text); set it as plain text without 'secure:'"
    )


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


# --- settings a switched-off feature would drop: switches and defaults from the models' fields -----


# The keys an existing VPC replaces: every network key but `existing` is the created VPC's layout.
_LAYOUT_KEYS = tuple(to_camel(name) for name in NetworkSettings.model_fields if name != "existing")


def _sections() -> Iterator[tuple[str, type[BaseModel]]]:
    """Each `gpu-platform:<key>` whose value is one model (`cluster`, `karpenter`, ...): its key and model."""
    for name, field in StackSettings.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield to_camel(name), field.annotation


@functools.cache
def _adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    return TypeAdapter(model.model_fields[name].rebuild_annotation())


def _value(section: Mapping[str, Any], model: type[BaseModel], name: str) -> Any:
    """`model`'s field `name` in a raw section, as the model would read it (its default when unset); None if invalid."""
    try:
        return _adapter(model, name).validate_python(section.get(to_camel(name), model.model_fields[name].default))
    except ValidationError:
        return None  # the model reports the bad value


def _switched_off(section: Any, model: type[BaseModel], switch: str) -> TypeGuard[dict[str, Any]]:
    return isinstance(section, dict) and _value(section, model, switch) is False


def _off_message(block: str, switch: str) -> str:
    return f"ignored while {block}.{switch} is false; remove it or set {block}.{switch}: true"


def _ignored_by_switches(values: Mapping[str, Any]) -> Iterator[tuple[Location, str]]:
    """Keys of a section whose `enabled` is false, then keys whose `IgnoredUnless` switch is false."""
    sections = list(_sections())
    for block, model in sections:
        section = values.get(block)
        if SECTION_SWITCH in model.model_fields and _switched_off(section, model, SECTION_SWITCH):
            for key, value in section.items():
                if key != SECTION_SWITCH and value not in ([], {}):  # an empty list drops nothing
                    yield (block, key), _off_message(block, SECTION_SWITCH)
    for block, model in sections:
        section = values.get(block)
        for name, field in model.model_fields.items():
            switch = next((m.switch for m in field.metadata if isinstance(m, IgnoredUnless)), None)
            if switch and _switched_off(section, model, switch) and section.get(to_camel(name)) not in (None, [], {}):
                yield (block, to_camel(name)), _off_message(block, to_camel(switch))


def _ignored_pool_keys(pool: dict[str, Any], location: Location) -> Iterator[tuple[Location, str]]:
    yield from _ignored_sharing_keys(pool.get("gpuSharing"), (*location, "gpuSharing"))
    if pool.get("warmSlotShape") is not None and _value(pool, NodePoolSettings, "warm_gpu_slots") == 0:
        yield (
            (*location, "warmSlotShape"),
            "ignored while warmGpuSlots is 0 (no warm slots); remove it or set warmGpuSlots",
        )


def _ignored_sharing_keys(sharing: Any, location: Location) -> Iterator[tuple[Location, str]]:
    # "none" is the one strategy that shares nothing (a value's meaning, not a field the model could mark).
    strategy = _value(sharing, GpuSharingSettings, "strategy") if isinstance(sharing, dict) else None
    if strategy == "none" and "failRequestsGreaterThanOne" in sharing:
        yield (
            (*location, "failRequestsGreaterThanOne"),
            "ignored with strategy 'none' (each pod gets a whole GPU); remove it",
        )


def ignored_settings(values: Mapping[str, Any]) -> list[tuple[Location, str]]:
    """Keys that are set but would have no effect: a contradiction, reported instead of dropped."""
    found = list(_ignored_by_switches(values))
    cluster = values.get("cluster")
    private = _switched_off(cluster, ClusterSettings, "endpoint_public_access")
    if isinstance(cluster, dict) and cluster.get("publicAccessCidrs") and private:
        found.append(
            (
                ("cluster", "publicAccessCidrs"),
                "ignored while cluster.endpointPublicAccess is false (the endpoint is private); "
                "remove it or set endpointPublicAccess: true",
            )
        )
    network = values.get("network")
    if isinstance(network, dict) and isinstance(network.get("existing"), dict):
        found += [
            (("network", key), "ignored with network.existing (the existing VPC keeps its own layout); remove it")
            for key in _LAYOUT_KEYS
            if key in network
        ]
    found += _ignored_sharing_keys(values.get("gpuSharing"), ("gpuSharing",))
    karpenter = values.get("karpenter")
    pools = karpenter.get("nodePools") if isinstance(karpenter, dict) else None
    for index, pool in enumerate(pools if isinstance(pools, list) else []):
        if isinstance(pool, dict):
            found += _ignored_pool_keys(pool, ("karpenter", "nodePools", index))
    return found
