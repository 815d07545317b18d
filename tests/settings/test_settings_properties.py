"""Bad input, property-based: any mutation of the staging config, at any nesting, is either accepted or
rejected with the clean key-path error (`SettingsError`), never another exception; mutations that are
invalid whatever the field (wrong JSON type, out-of-range integer, unknown key) are always rejected at
their own key path; and through the real synth they exit 2 and write nothing.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from components.settings import SettingsError, StackSettings, load_settings
from offline.config_files import read_stack_config
from tests.conftest import PROJECT_DIR, synth_in_process

Path_ = tuple[str | int, ...]  # top-level config key, then dict keys / list indices

STAGING = read_stack_config(PROJECT_DIR, "staging").values
KEY_PATH = re.compile(r"^(gpu-platform|aws):")
UNKNOWN_KEY = "zzUnknownKey"
# Strings no top-level scalar accepts (region, clusterName, kubernetesVersion, protectResources).
BAD_SCALAR_STRINGS = ("", "{}", "[1, 2]", " 1.35 ", "ünïcode", "x" * 300)
OUT_OF_RANGE_INTS = (-1, 10**12)  # every integer setting is bounded on both sides (counts >= 0)


def _tree(config: dict[str, str]) -> dict[str, Any]:
    """The flat Pulumi config map with structured values parsed (as the stack YAML holds them)."""
    tree: dict[str, Any] = {}
    for key, text in config.items():
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = text
        tree[key] = value if isinstance(value, dict | list) else text
    return tree


def _flat(tree: dict[str, Any]) -> dict[str, str]:
    """Back to what the CLI hands the program: structured values as JSON text, scalars as strings."""
    flat = {}
    for key, value in tree.items():
        if isinstance(value, bool):
            flat[key] = "true" if value else "false"
        elif isinstance(value, str):
            flat[key] = value
        else:
            flat[key] = json.dumps(value)
    return flat


def _paths(value: Any, prefix: Path_) -> list[Path_]:
    paths = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths += _paths(item, (*prefix, index))
    return paths


STAGING_TREE = _tree(STAGING)
ALL_PATHS = [p for key, value in STAGING_TREE.items() for p in _paths(value, (key,))]


def _get(tree: Any, path: Path_) -> Any:
    for part in path:
        tree = tree[part]
    return tree


def _replace(tree: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    tree = json.loads(json.dumps(tree))
    parent: Any = tree if len(path) == 1 else _get(tree, path[:-1])
    parent[path[-1]] = value
    return tree


def _delete(tree: dict[str, Any], path: Path_) -> dict[str, Any]:
    tree = json.loads(json.dumps(tree))
    parent: Any = tree if len(path) == 1 else _get(tree, path[:-1])
    del parent[path[-1]]
    return tree


def key_path(path: Path_) -> str:
    """The key path `SettingsError` uses (components.settings.errors.key_path): a.b[0]["odd key"]."""
    rendered = str(path[0])
    for part in path[1:]:
        if isinstance(part, int):
            rendered += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][\w-]*", part):
            rendered += f".{part}"
        else:
            rendered += f"[{json.dumps(part)}]"
    return rendered


def outcome(config: dict[str, str]) -> StackSettings | SettingsError:
    """Accepted settings or the clean error; any other exception fails the test (with hypothesis' example)."""
    try:
        return load_settings(config)
    except SettingsError as error:
        assert error.problems, "a SettingsError must name at least one problem"
        for problem_path, message in error.problems:
            assert KEY_PATH.match(problem_path), f"problem path {problem_path!r} is not a config key path"
            assert message.strip(), f"{problem_path}: empty message"
        return error


def assert_rejected_at(config: dict[str, str], path: Path_) -> SettingsError:
    result = outcome(config)
    assert isinstance(result, SettingsError), f"{key_path(path)}: invalid value accepted"
    wanted = key_path(path)
    # The problem names the mutated key, an enclosing object (a model-level rule), or a field inside it.
    related = [p for p, _ in result.problems if wanted.startswith(p) or p.startswith(wanted)]
    assert related, f"{wanted}: error names only {[p for p, _ in result.problems]}"
    return result


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)


@st.composite
def any_mutation(draw: st.DrawFn) -> tuple[Path_, dict[str, str]]:
    """Replace any node with any JSON value, delete it, or add a key anywhere (maybe a valid config)."""
    path = draw(st.sampled_from(ALL_PATHS))
    kind = draw(st.sampled_from(["replace", "delete", "add-key"]))
    if kind == "replace" or (kind == "add-key" and not isinstance(_get(STAGING_TREE, path), dict)):
        value = draw(json_values)
        top_level_scalar = len(path) == 1 and not isinstance(_get(STAGING_TREE, path), dict | list)
        tree = _replace(STAGING_TREE, path, str(value) if top_level_scalar else value)
    elif kind == "delete":
        tree = _delete(STAGING_TREE, path)
    else:
        tree = _replace(STAGING_TREE, (*path, draw(st.text(min_size=1, max_size=10))), draw(json_values))
    return path, _flat(tree)


def _wrong_type_for(value: Any) -> st.SearchStrategy[Any]:
    if isinstance(value, dict | list):
        return st.one_of(st.integers(), st.text(max_size=8).filter(lambda s: not s.strip().startswith(("{", "["))))
    if type(value) is int:
        return st.sampled_from(OUT_OF_RANGE_INTS) | st.lists(st.integers(), max_size=2) | st.just({"a": 1})
    return st.lists(st.integers(), max_size=2) | st.dictionaries(st.text(max_size=4), st.integers(), max_size=2)


@st.composite
def invalid_mutation(draw: st.DrawFn) -> tuple[Path_, dict[str, str]]:
    """A mutation no field accepts: wrong JSON type, out-of-range integer, bad scalar string, unknown key."""
    path = draw(st.sampled_from(ALL_PATHS))
    current = _get(STAGING_TREE, path)
    if len(path) == 1 and not isinstance(current, dict | list):
        return path, _flat(_replace(STAGING_TREE, path, draw(st.sampled_from(BAD_SCALAR_STRINGS))))
    if isinstance(current, dict) and draw(st.booleans()):
        # An unknown key with an object value: rejected by every model (extra=forbid) and every str map.
        bad_path = (*path, UNKNOWN_KEY)
        return bad_path, _flat(_replace(STAGING_TREE, bad_path, {"nested": [1]}))
    return path, _flat(_replace(STAGING_TREE, path, draw(_wrong_type_for(current))))


def test_the_staging_config_itself_is_valid() -> None:
    assert isinstance(outcome(STAGING), StackSettings)
    assert len(ALL_PATHS) > 50  # the mutations reach deep into the structured keys


@hypothesis_settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_mutation())
def test_any_mutation_is_accepted_or_cleanly_rejected(mutation: tuple[Path_, dict[str, str]]) -> None:
    _, config = mutation
    outcome(config)


@hypothesis_settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invalid_mutation())
def test_invalid_values_are_rejected_at_their_key_path(mutation: tuple[Path_, dict[str, str]]) -> None:
    path, config = mutation
    assert_rejected_at(config, path)


@given(st.text(min_size=1, max_size=20).filter(lambda s: ":" not in s))
@hypothesis_settings(max_examples=50, deadline=None)
def test_unknown_top_level_keys_are_rejected(name: str) -> None:
    key = f"gpu-platform:{name}"
    config = {**STAGING, key: "1"}
    assert_rejected_at(config, (key,))


def test_invalid_mutation_covers_every_depth() -> None:
    depths = {len(p) for p in ALL_PATHS}
    assert max(depths) >= 4, depths  # e.g. karpenter.nodePools[0].disruptionBudgets[0].nodes


# --- through the real synth ----------------------------------------------------------------------------------


def _write_stack(project: Path, config: dict[str, str]) -> None:
    values = {}
    for key, text in config.items():
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        values[key] = parsed if isinstance(parsed, dict | list) else text
    (project / "Pulumi.staging.yaml").write_text(yaml.safe_dump({"config": values}, sort_keys=True), encoding="utf-8")


@hypothesis_settings(max_examples=4, deadline=None, derandomize=True)
@given(invalid_mutation())
def test_synth_exits_2_and_writes_nothing(project_copy: Path, mutation: tuple[Path_, dict[str, str]]) -> None:
    path, config = mutation
    error = assert_rejected_at(config, path)
    _write_stack(project_copy, config)
    out = project_copy / "out"
    shutil.rmtree(out, ignore_errors=True)
    code, _, stderr = synth_in_process("staging", out, project_copy)
    assert code == 2, stderr
    assert "Traceback" not in stderr
    assert all(p in stderr for p, _ in error.problems), stderr
    assert not out.exists() or list(out.iterdir()) == [], "an invalid config must write nothing"
