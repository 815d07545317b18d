"""Every case of `tests/support/config_corpus.py` through the synth's own front door.

Cases run in process through `synth.main` (the code path of `python synth.py`), so a bad config
costs milliseconds; a few run as real subprocesses to prove the exit code, stderr and the empty
--out directory exactly as a user sees them. Add cases in `tests/support/config_corpus.py`, not here.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from offline.config_files import read_stack_config
from offline.project_copy import copy_program
from offline.runner import install_mocks
from tests.conftest import PROJECT_DIR, run_synth, synth_in_process
from tests.support.config_corpus import CASES, DELETE, INVALID, OK, STAGING, Case

_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")
_PROBLEM_LINE = re.compile(r"^  (\S+): ", re.MULTILINE)


def _top_key(path: str) -> tuple[str, str]:
    namespace, _, rest = path.partition(":")
    cut = min((i for i in (rest.find("."), rest.find("[")) if i >= 0), default=len(rest))
    return f"{namespace}:{rest[:cut]}", rest[cut:]


def _edit(config: dict[str, Any], path: str, value: Any) -> None:
    top, rest = _top_key(path)
    parts: list[str | int] = [top] + [int(i) if i else k for k, i in _PART.findall(rest)]
    node: Any = config
    for part, child in itertools.pairwise(parts):
        if isinstance(node, dict) and part not in node:
            node[part] = [] if isinstance(child, int) else {}
        node = node[part]
    last = parts[-1]
    if value is DELETE:
        del node[last]
    elif isinstance(node, list) and isinstance(last, int) and last == len(node):
        node.append(value)
    else:
        node[last] = value


@functools.cache
def _staging_json() -> str:
    return json.dumps(yaml.load(STAGING, Loader=yaml.CSafeLoader))


def stack_text(case: Case) -> str:
    if isinstance(case.stack, str):
        return case.stack
    document = json.loads(_staging_json())  # a fresh copy of the staging stack file per case
    for path, value in case.stack.items():
        _edit(document["config"], path, value)
    return yaml.dump(document, Dumper=yaml.CSafeDumper, sort_keys=False)


def named_paths(stderr: str) -> set[str]:
    return set(_PROBLEM_LINE.findall(stderr))


@pytest.fixture(scope="module")
def corpus_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = copy_program(tmp_path_factory.mktemp("corpus"))
    for case in CASES:
        (project / f"Pulumi.{case.id}.yaml").write_text(stack_text(case), encoding="utf-8")
    return project


def test_case_ids_are_unique_stack_names() -> None:
    ids = [case.id for case in CASES]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*", i) for i in ids)
    assert all(case.exit in (OK, INVALID) and bool(case.paths) == (case.exit == INVALID) for case in CASES)


BAD = [c for c in CASES if c.exit == INVALID]
GOOD = [c for c in CASES if c.exit == OK]


@pytest.mark.parametrize("case", BAD, ids=[c.id for c in BAD])
def test_a_mistake_names_exactly_its_key_paths(corpus_project: Path, tmp_path: Path, case: Case) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = synth_in_process(case.id, out, corpus_project)
    assert code == INVALID, stdout + stderr
    assert named_paths(stderr) == set(case.paths), stderr
    assert "Traceback" not in stderr and "pattern" not in stderr and "'^" not in stderr
    assert "Input should" not in stderr, "pydantic's wording: say what is allowed in words"
    assert not out.exists(), "a bad config must write nothing"


@pytest.mark.slow  # a whole synth each (~0.8 s): the mistakes above stop before any resource
@pytest.mark.parametrize("case", GOOD, ids=[c.id for c in GOOD])
def test_a_good_file_synths(corpus_project: Path, tmp_path: Path, case: Case) -> None:
    code, stdout, stderr = synth_in_process(case.id, tmp_path / "out", corpus_project)
    assert (code, stderr) == (OK, ""), stdout + stderr
    assert (tmp_path / "out" / "resources.json").is_file()


# One per class: what a user sees from the real command line.
SUBPROCESS_CASES = ["dup-in-pool", "typo-namespace", "empty-cluster-name", "karpenter-off-with-pools", "cron-words", "keys-not-under-config", "secret-tag", "snake-block-key", "hub-login-typo", "pool-mixes-gpu-counts", "cpu-user-pool-too-small"]  # fmt: skip


@pytest.mark.parametrize("case_id", SUBPROCESS_CASES)
def test_the_command_line_exits_2_cleanly(corpus_project: Path, tmp_path: Path, case_id: str) -> None:
    case = next(c for c in CASES if c.id == case_id)
    result = run_synth(case.id, tmp_path / "out", corpus_project)
    assert result.returncode == INVALID, result.stderr
    assert named_paths(result.stderr) == set(case.paths), result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert not (tmp_path / "out").exists()


def _program_cases() -> list[Case]:
    """Mistakes that reach the program as config (duplicates and keys outside config: never become config)."""
    # `leaf-secret-`: which value inside a `secure:`-holding key is the secret only the stack file shows; the
    # runtime marks the whole key secret (`gpu-platform:labs`, for its hubs' passwords), so the synth proves those.
    file_level = ("dup-", "keys-not-under-config", "config-misspelled", "leaf-secret-")
    return [c for c in BAD if not c.id.startswith(file_level)]


@pytest.mark.parametrize("case", _program_cases(), ids=[c.id for c in _program_cases()])
def test_pulumi_up_stops_with_the_same_paths_before_any_resource(corpus_project: Path, case: Case) -> None:
    """`pulumi up` under mocks: a RunError (no traceback) naming the same keys; nothing registered.

    The CLI passes decrypted secrets and marks the whole top-level key secret, so a secret is named
    by its top-level key there.
    """
    config = read_stack_config(corpus_project, case.id)
    monitor = install_mocks(config.project, case.id, "us-west-1", config.values, list(config.secret_keys))
    message = _up_stops_before_any_resource(monitor)
    expected = {
        next((k for k in config.secret_keys if p in config.secret_paths and p.startswith(k)), p) for p in case.paths
    }
    assert named_paths(message) == expected, message


def _up_stops_before_any_resource(monitor: Any) -> str:
    """Run `__main__.py` as `pulumi up` would: it must raise RunError before registering anything."""
    try:
        with pytest.raises(pulumi.RunError) as caught:
            runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__")
        assert monitor.registrations == []
    finally:
        pulumi.runtime.settings.reset_options()
    return str(caught.value)


def test_stack_files_read_scalars_as_the_pulumi_cli_does(tmp_path: Path) -> None:
    """YAML 1.2 scalars as Go yaml.v3 decodes them: yes/on, dates and 1:30 stay text; true is a boolean."""
    (tmp_path / "Pulumi.yaml").write_text("name: demo\n")
    (tmp_path / "Pulumi.dev.yaml").write_text(
        "config:\n  demo:m:\n    a: yes\n    b: on\n    c: 2027-06-30\n    d: 1:30\n    e: true\n    f: 0x1F\n    g: ~\n"
    )
    values = read_stack_config(tmp_path, "dev").values
    assert values["demo:m"] == '{"a": "yes", "b": "on", "c": "2027-06-30", "d": "1:30", "e": true, "f": 31, "g": null}'


def test_pulumi_up_checks_every_key_the_cli_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The language host passes all stack config as PULUMI_CONFIG (any namespace) and the secret keys
    as PULUMI_CONFIG_SECRET_KEYS; `read_settings` checks both before the first resource."""
    values = {**read_stack_config(PROJECT_DIR, "staging").values, "gpu-platfrom:demo": '{"enabled": true}'}
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(values))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["gpu-platform:clusterName", "aws:secretKey"]))
    monitor = install_mocks("gpu-platform", "staging", "us-west-1", {}, [])
    message = _up_stops_before_any_resource(monitor)
    assert named_paths(message) == {"gpu-platfrom:demo", "gpu-platform:clusterName"}
