"""Editing a flat stack config map (`gpu-platform:<key>` -> text, as the Pulumi CLI hands it over) in tests."""

from __future__ import annotations

import json
from typing import Any


def with_value(base: dict[str, str], key: str, value: Any) -> dict[str, str]:
    """`base` with one top-level key replaced, or removed for None (structured values as JSON text, as the CLI passes them)."""
    config = dict(base)
    if value is None:
        config.pop(key, None)
    else:
        config[key] = value if isinstance(value, str) else json.dumps(value)
    return config


def merged(base: dict[str, str], key: str, patch: dict[str, Any]) -> dict[str, str]:
    """`base` with a structured key deep-merged with `patch`."""

    def merge(left: Any, right: Any) -> Any:
        if isinstance(left, dict) and isinstance(right, dict):
            return {**left, **{k: merge(left.get(k), v) for k, v in right.items()}}
        return right

    current = json.loads(base[key]) if key in base else {}
    return with_value(base, key, merge(current, patch))
