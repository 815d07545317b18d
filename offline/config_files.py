"""Read `Pulumi.yaml` + `Pulumi.<stack>.yaml` into the flat string map the Pulumi CLI hands a program.

The CLI applies project-level defaults, namespaces project keys (`gpu-platform:<key>`), passes
structured values as JSON text and scalars as strings, and decrypts `secure:` values. Offline we
cannot decrypt, so a secret becomes the placeholder `"[secret]"` and its key is reported as secret.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SECRET_PLACEHOLDER = "[secret]"


class StackFileError(Exception):
    """A stack or project file that cannot be read (missing, not YAML, wrong shape)."""


@dataclass(frozen=True)
class StackConfig:
    project: str
    values: dict[str, str]
    secret_keys: tuple[str, ...]


def _load_yaml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise StackFileError(f"{path.name}: file not found")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise StackFileError(f"{path.name}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise StackFileError(f"{path.name}: must be a YAML mapping")
    return data


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
    project_file = _load_yaml(project_dir / "Pulumi.yaml")
    project = project_file.get("name")
    if not isinstance(project, str):
        raise StackFileError("Pulumi.yaml: 'name' must be a string")
    declared = project_file.get("config") or {}
    stack_file = _load_yaml(project_dir / f"Pulumi.{stack}.yaml")
    stack_values = stack_file.get("config") or {}
    if not isinstance(declared, dict) or not isinstance(stack_values, dict):
        raise StackFileError(f"Pulumi.yaml / Pulumi.{stack}.yaml: 'config' must be a mapping")
    merged = _project_defaults(project, declared)
    merged.update({_qualify(project, key): value for key, value in stack_values.items()})
    secret_keys = tuple(sorted(key for key, value in merged.items() if _contains_secret(value)))
    values = {key: _as_config_string(_redact(value)) for key, value in merged.items()}
    return StackConfig(project=project, values=values, secret_keys=secret_keys)


def stacks_in(project_dir: Path | str) -> tuple[str, ...]:
    """Stack names that have a `Pulumi.<stack>.yaml` next to `Pulumi.yaml`."""
    return tuple(sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in Path(project_dir).glob("Pulumi.*.yaml")))
