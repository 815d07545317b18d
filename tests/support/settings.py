"""One way a test gets a stack's settings: `settings_for(stack, **overrides)`, or its flat config map `config_for`.

A shipped stack's config map, as the Pulumi CLI hands it to the program, edited and then validated by
`load_settings` like the real config, so a test's variant passes the same rules as a stack file would:

    settings_for("prod")                                         # the stack as shipped
    settings_for("staging", observability={"gpuMetrics": True})  # a top-level `gpu-platform:<key>` replaced
    settings_for("staging", gpu_node_group=None)                 # snake_case names work too; None removes a key
    settings_for("staging", merge={"gpuNodeGroup": {"enabled": True}})  # deep-merged into the stack's value
    settings_for("staging", pool={"gpuLimit": 2, "instanceTypes": DELETE})  # the first Karpenter pool's fields
    settings_for("staging", pools=[{"name": "p", "instanceTypes": ["g5.xlarge"]}])  # every pool replaced
    settings_for("staging", labs_without=("sessions",))          # a key dropped from every lab of the stack

The labs' sessions and hub name the stack's own pools: an edit that replaces the pools (`pools`, or a whole
`karpenter`) and keeps the stack's labs drops both from every lab (unless `labs_without` says otherwise).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

from components.settings import StackSettings, load_settings
from offline.config_files import read_stack_config
from tests.conftest import PROJECT_DIR
from tests.support.config_edits import merged, with_value

NAMESPACE = "gpu-platform:"
DELETE = object()
"""A `pool` field set to DELETE is removed from the pool."""
POOL_BINDINGS = ("sessions", "hub")
"""What a lab names the stack's pools by: dropped when an edit replaces the pools."""


@functools.cache
def _stack_values(stack: str) -> Mapping[str, str]:
    return read_stack_config(PROJECT_DIR, stack).values


@functools.cache
def _shipped(stack: str) -> StackSettings:
    """A stack as shipped, validated once per process (the models are frozen, so one object serves every test)."""
    return load_settings(_stack_values(stack))


def config_key(name: str) -> str:
    """`gpu-platform:<key>` for a top-level key in the stack file's camelCase or its snake_case field name."""
    head, *rest = name.split("_")
    return NAMESPACE + head + "".join(part[:1].upper() + part[1:] for part in rest)


def config_for(
    stack: str,
    *,
    merge: Mapping[str, Mapping[str, Any]] | None = None,
    pool: Mapping[str, Any] | None = None,
    pools: list[dict[str, Any]] | None = None,
    labs_without: Iterable[str] | None = None,
    **overrides: Any,
) -> dict[str, str]:
    """The flat config map of `stack` with the edits of `settings_for` applied, in its order (see the module)."""
    values = dict(_stack_values(stack))
    keys = {config_key(name) for name in overrides}
    for name, value in overrides.items():
        values = with_value(values, config_key(name), value)
    for name, patch in (merge or {}).items():
        values = merged(values, config_key(name), dict(patch))
    if pool is not None or pools is not None:
        karpenter = json.loads(values[NAMESPACE + "karpenter"])
        if pools is not None:
            karpenter["nodePools"] = pools
        if pool is not None:
            first = karpenter["nodePools"][0]
            first.update({field: value for field, value in pool.items() if value is not DELETE})
            for field in [field for field, value in pool.items() if value is DELETE]:
                del first[field]
        values = with_value(values, NAMESPACE + "karpenter", karpenter)
    if NAMESPACE + "labs" not in keys:
        if labs_without is None and (pools is not None or NAMESPACE + "karpenter" in keys):
            labs_without = POOL_BINDINGS
        dropped = set(labs_without or ())
        if dropped and NAMESPACE + "labs" in values:
            labs = json.loads(values[NAMESPACE + "labs"])
            values = with_value(
                values, NAMESPACE + "labs", [{k: v for k, v in lab.items() if k not in dropped} for lab in labs]
            )
    return values


def settings_for(
    stack: str,
    *,
    merge: Mapping[str, Mapping[str, Any]] | None = None,
    pool: Mapping[str, Any] | None = None,
    pools: list[dict[str, Any]] | None = None,
    labs_without: Iterable[str] | None = None,
    **overrides: Any,
) -> StackSettings:
    """`stack`'s settings, edited (module docstring): `overrides` replace top-level keys (None removes one),
    `merge` deep-merges into them, `pool` edits the first Karpenter pool, `pools` replaces the pools and
    `labs_without` drops keys from every lab. Raises `SettingsError` as the program would."""
    if merge is None and pool is None and pools is None and labs_without is None and not overrides:
        return _shipped(stack)
    return load_settings(config_for(stack, merge=merge, pool=pool, pools=pools, labs_without=labs_without, **overrides))
