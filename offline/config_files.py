"""Read `Pulumi.yaml` + `Pulumi.<stack>.yaml` into the flat string map the Pulumi CLI hands a program.

The CLI applies project-level defaults, namespaces project keys (`gpu-platform:<key>`), passes
structured values as JSON text and scalars as strings, and decrypts `secure:` values. Offline we
cannot decrypt, so a secret becomes the placeholder `"[secret]"` and its key is reported as secret.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.settings import SettingsError, allowed_config_keys

SECRET_PLACEHOLDER = "[secret]"

# Top-level keys of a stack file: the fields of `ProjectStack` (pulumi/pulumi sdk/go/common/workspace/project.go).
STACK_FILE_KEYS = ("config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt")


class StackFileError(Exception):
    """A stack or project file that cannot be read (missing, not YAML, wrong shape)."""


@dataclass(frozen=True)
class StackConfig:
    project: str
    values: dict[str, str]
    secret_keys: tuple[str, ...]
    # `secure:` values by full key path (`gpu-platform:tags.owner`), deeper than `secret_keys`.
    secret_paths: tuple[str, ...] = ()


# libyaml's parser when PyYAML was built with it (the wheels are): the same nodes, marks and resolvers, ~10x faster.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StackFileLoader(_SafeLoader):  # type: ignore[misc,valid-type]
    """YAML as the Pulumi CLI reads it (Go gopkg.in/yaml.v3, YAML 1.2 style scalars).

    PyYAML follows YAML 1.1: `yes`/`no`/`on`/`off` become booleans, `2027-06-30` a date and
    `1:30` a base-60 number. yaml.v3 keeps all of them as strings when decoding into
    `interface{}` (yaml.v3 decode.go, "for backward compatibility" for timestamps), so they are
    strings here too; only true/false are booleans.
    """


_REPLACED_TAGS = ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int")
_StackFileLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _REPLACED_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_StackFileLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_StackFileLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int",
    re.compile(r"^(?:[-+]?(?:0|[1-9][0-9_]*)|0[0-7_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+)$"),
    list("-+0123456789"),
)


def _duplicate_keys(node: yaml.Node, location: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], int, int]]:
    """Every key set twice in one mapping: (location, line, line of the first one)."""
    found: list[tuple[tuple[Any, ...], int, int]] = []
    if isinstance(node, yaml.MappingNode):
        first_lines: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.start_mark)
            line = key_node.start_mark.line + 1
            if key in first_lines:
                found.append(((*location, key), line, first_lines[key]))
            else:
                first_lines[key] = line
            found += _duplicate_keys(value_node, (*location, key))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            found += _duplicate_keys(item, (*location, index))
    return found


def _parse(path: Path) -> tuple[dict[str, Any], list[tuple[tuple[Any, ...], int, int]]]:
    if not path.is_file():
        raise StackFileError(f"{path.name}: file not found")
    loader = _StackFileLoader(path.read_text(encoding="utf-8"))
    try:
        node = loader.get_single_node()
        duplicates = _duplicate_keys(node) if node is not None else []
        data = loader.construct_document(node) if node is not None else {}
    except yaml.YAMLError as exc:
        raise StackFileError(f"{path.name}: not valid YAML ({exc})") from None
    finally:
        loader.dispose()
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise StackFileError(f"{path.name}: must be a YAML mapping")
    return data, duplicates


def _load_yaml(path: Path) -> dict[str, Any]:
    return _parse(path)[0]


def key_path(project: str, location: tuple[Any, ...]) -> str:
    """`("config", "karpenter", "nodePools", 0, "name")` -> `gpu-platform:karpenter.nodePools[0].name`."""
    if len(location) < 2 or location[0] != "config":
        return ".".join(str(part) for part in location)
    path = _qualify(project, str(location[1]))
    for part in location[2:]:
        if isinstance(part, int):
            path += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][\w-]*", str(part)):
            path += f".{part}"
        else:  # the same spelling as components/settings/errors.py uses for odd map keys
            path += f"[{json.dumps(str(part))}]"
    return path


def _duplicate_problems(file_name: str, project: str, duplicates: list[Any]) -> list[tuple[str, str]]:
    return [
        (
            key_path(project, location),
            f"duplicate key in {file_name} (line {line}, first set at line {first}); the Pulumi CLI "
            "rejects a stack file with a key set twice: keep one",
        )
        for location, line, first in duplicates
    ]


def _misplaced_keys(file_name: str, project: str, stack_file: dict[str, Any]) -> list[tuple[str, str]]:
    """Top-level keys a stack file cannot have; config keys above `config:` are the common case."""
    problems = []
    for key in stack_file:
        if key in STACK_FILE_KEYS:
            continue
        text = str(key)
        if ":" in text or _qualify(project, text) in allowed_config_keys():
            problems.append(
                (_qualify(project, text), f"is at the top level of {file_name}; stack settings go under 'config:'")
            )
        else:
            hint = difflib.get_close_matches(text, STACK_FILE_KEYS, n=1)
            suggestion = f"; did you mean '{hint[0]}'?" if hint else ""
            problems.append(
                (text, f"unknown top-level key in {file_name}{suggestion} (allowed: {', '.join(STACK_FILE_KEYS)})")
            )
    return problems


def _secret_paths(value: Any, path: str) -> list[str]:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return [path]
        return [p for k, v in value.items() for p in _secret_paths(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _secret_paths(v, f"{path}[{i}]")]
    return []


def _qualify(project: str, key: str) -> str:
    return key if ":" in key else f"{project}:{key}"


def _as_config_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, sort_keys=True)


def _project_defaults(project: str, declared: dict[str, Any]) -> dict[str, Any]:
    defaults = {}
    for key, spec in declared.items():
        if isinstance(spec, dict) and ("default" in spec or "value" in spec):
            defaults[_qualify(project, key)] = spec.get("default", spec.get("value"))
        elif not isinstance(spec, dict):
            defaults[_qualify(project, key)] = spec  # a plain project-level value
    return defaults


def _contains_secret(value: Any) -> bool:
    if isinstance(value, dict):
        return set(value) == {"secure"} or any(_contains_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_secret(v) for v in value)
    return False


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            return SECRET_PLACEHOLDER
        return {k: _redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def read_stack_config(project_dir: Path | str, stack: str) -> StackConfig:
    """The config map `pulumi up --stack <stack>` would give the program."""
    project_dir = Path(project_dir)
    project_file, project_duplicates = _parse(project_dir / "Pulumi.yaml")
    project = project_file.get("name")
    if not isinstance(project, str):
        raise StackFileError("Pulumi.yaml: 'name' must be a string")
    declared = project_file.get("config") or {}
    file_name = f"Pulumi.{stack}.yaml"
    stack_file, stack_duplicates = _parse(project_dir / file_name)
    # Reported alone: the CLI refuses such a file, and checking what it would have read instead
    # ("last one wins", nothing under config:) would only add misleading "required" noise.
    duplicates = _duplicate_problems("Pulumi.yaml", project, project_duplicates)
    duplicates += _duplicate_problems(file_name, project, stack_duplicates)
    if duplicates:
        raise SettingsError(duplicates)
    misplaced = _misplaced_keys(file_name, project, stack_file)
    if misplaced:
        raise SettingsError(misplaced)
    stack_values = stack_file.get("config") or {}
    if not isinstance(declared, dict) or not isinstance(stack_values, dict):
        raise StackFileError(f"Pulumi.yaml / {file_name}: 'config' must be a mapping of keys to values")
    merged = _project_defaults(project, declared)
    merged.update({_qualify(project, str(key)): value for key, value in stack_values.items()})
    secret_keys = tuple(sorted(key for key, value in merged.items() if _contains_secret(value)))
    secret_paths = tuple(p for key in secret_keys for p in _secret_paths(merged[key], key))
    values = {key: _as_config_string(_redact(value)) for key, value in merged.items()}
    return StackConfig(project, values, secret_keys, secret_paths)


def stacks_in(project_dir: Path | str) -> tuple[str, ...]:
    """Stack names that have a `Pulumi.<stack>.yaml` next to `Pulumi.yaml`."""
    return tuple(sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in Path(project_dir).glob("Pulumi.*.yaml")))
