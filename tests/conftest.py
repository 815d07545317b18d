"""Shared fixtures: the synthesized plan of each stack, and the shared reference folder."""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import io
import os
import re
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pulumi
import pytest
import yaml

from offline import speed
from offline.config_files import read_stack_config, stacks_in
from offline.plan import Plan
from offline.project_copy import copy_program
from offline.runner import discard_pending_tasks

PROJECT_DIR = Path(__file__).resolve().parent.parent


SHARED_DIR = PROJECT_DIR.parent / "shared"
STACKS = stacks_in(PROJECT_DIR)


# The program's own source (not its tests or tools that only read plans): what the house-rule scans read.
PROGRAM_SOURCES = (
    "components",
    "offline",
    "policy",
    "gpu_reaper",
    "__main__.py",
    "synth.py",
    "preflight.py",
    "preflight_prices.py",
)


def program_files() -> list[Path]:
    """Every Python file of `PROGRAM_SOURCES`, folders walked recursively, in a stable order."""
    files: list[Path] = []
    for entry in PROGRAM_SOURCES:
        path = PROJECT_DIR / entry
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return files


@functools.cache
def parsed(source: str) -> ast.Module:
    """`source` parsed once per session (read-only: never change the tree): the house-rule scans read the same
    program files again and again."""
    return ast.parse(source)


def require_present(path: Path) -> Path:
    """`path`, or fail when CI=true (a missing ../shared is a broken checkout there), else skip with the reason."""
    if path.exists():
        return path
    message = f"{path} is missing: clone the project beside its shared/ folder"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


def shared_path(*parts: str) -> Path:
    """A file or folder under ../shared (see `require_present`)."""
    return require_present(SHARED_DIR.joinpath(*parts))


def run_synth(stack: str, out_dir: Path, project: Path = PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    """`python synth.py --stack STACK --out DIR` in a fresh interpreter, in `project` (a copy, or the tree)."""
    return subprocess.run(
        [sys.executable, "synth.py", "--stack", stack, "--out", str(out_dir)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def synth_in_process(stack: str, out_dir: Path, project: Path = PROJECT_DIR) -> tuple[int, str, str]:
    """`synth.main` in this interpreter (the code path of `python synth.py`): exit code, stdout, stderr.

    Costs the program's run, not a fresh interpreter's imports (~0.8 s against ~5 s). Only the stack files of
    `project` count: the program's modules are the ones this interpreter imported from the tree.
    `tests/offline/test_synth.py` proves its bytes equal the real command's.
    """
    import synth

    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = synth.main(["--stack", stack, "--out", str(out_dir)], project_dir=project)
    return code, stdout.getvalue(), stderr.getvalue()


def synthesize(stack: str, out_dir: Path, project: Path = PROJECT_DIR) -> Plan:
    """Run the offline synth in process (`synth_in_process`), require success, and load its plan."""
    code, stdout, stderr = synth_in_process(stack, out_dir, project)
    assert code == 0, f"synth --stack {stack} failed:\n{stdout}\n{stderr}"
    return Plan.load(out_dir)


def run_program(project: Path = PROJECT_DIR) -> dict[str, Any]:
    """`__main__.py` run to the end as `pulumi up` runs it, under the mocks the caller installed: its namespace.

    A whole program run (~0.3 s): a test that calls it is `slow` (`SLOW_CALL`). A run that stops at the settings
    check (a config mistake, before any resource) calls `runpy` itself and stays in the fast set.
    """
    return runpy.run_path(str(project / "__main__.py"), run_name="__main__")


def registered_transforms(values: dict[str, str], resource_type: str) -> dict[str, int]:
    """Run staging's program with `values` under the mocks and count, per resource of `resource_type` (a pulumi-eks
    component or child type), the transforms registered on it: how a transform the mocks never run is proven
    attached (node repair, scheduler scoring). A whole program run: `slow` (`SLOW_CALL`)."""
    from offline.config_files import read_stack_config
    from offline.runner import install_mocks

    stack_config = read_stack_config(PROJECT_DIR, "staging")
    monitor = install_mocks(stack_config.project, "staging", "us-west-1", values, list(stack_config.secret_keys))
    transforms: dict[str, int] = {}
    register = monitor.RegisterResource

    def spy(request: Any) -> Any:
        if request.type == resource_type:
            transforms[request.name] = len(request.transforms)
        return register(request)

    monitor.RegisterResource = spy  # type: ignore[method-assign]

    @pulumi.runtime.test
    def program() -> None:
        run_program()

    program()
    return transforms


class SynthRun(NamedTuple):
    out: Path
    stdout: str
    stderr: str


@pytest.fixture(scope="session")
def staging_synth(tmp_path_factory: pytest.TempPathFactory) -> SynthRun:
    """The session's one synth of staging: where it wrote its plan, and what it printed (the summary)."""
    out = tmp_path_factory.mktemp("staging")
    code, stdout, stderr = synth_in_process("staging", out)
    assert code == 0, f"synth --stack staging failed:\n{stdout}\n{stderr}"
    return SynthRun(out, stdout, stderr)


@pytest.fixture(scope="session")
def staging_plan(staging_synth: SynthRun) -> Plan:
    return Plan.load(staging_synth.out)


@pytest.fixture(scope="session")
def prod_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    return synthesize("prod", tmp_path_factory.mktemp("prod"))


@pytest.fixture(scope="session")
def plans(staging_plan: Plan, prod_plan: Plan) -> dict[str, Plan]:
    """Every stack's plan, keyed by stack name."""
    assert set(STACKS) == {"staging", "prod"}, f"new stack file(s): add a fixture for {STACKS}"
    return {"staging": staging_plan, "prod": prod_plan}


@pytest.fixture(scope="session")
def stack_configs() -> dict[str, dict[str, str]]:
    """The flat config map of every stack, as the Pulumi CLI would hand it to the program."""
    return {stack: read_stack_config(PROJECT_DIR, stack).values for stack in STACKS}


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program in a scratch folder, so a test can add or rewrite stack files without touching the tree."""
    return copy_program(tmp_path_factory.mktemp("project"))


# Neither shipped stack runs the managed GPU node group (staging keeps warm Karpenter headroom, prod scales
# from zero), so the group is proven on a copy of staging that turns it on: one always-on g4dn.xlarge.
MANAGED_GPU_GROUP = {
    "enabled": True,
    "instanceTypes": ["g4dn.xlarge"],
    "capacityType": "ON_DEMAND",
    "minSize": 1,
    "desiredSize": 1,
    "maxSize": 1,
}


@pytest.fixture(scope="session")
def managed_group_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program with a staging stack file whose managed GPU group is on (`MANAGED_GPU_GROUP`)."""
    project = copy_program(tmp_path_factory.mktemp("managed-group"))
    stack_file = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text(encoding="utf-8"))
    stack_file["config"]["gpu-platform:gpuNodeGroup"] = MANAGED_GPU_GROUP
    (project / "Pulumi.staging.yaml").write_text(yaml.safe_dump(stack_file, sort_keys=False), encoding="utf-8")
    return project


@pytest.fixture(scope="session")
def managed_group_config(managed_group_project: Path) -> dict[str, str]:
    """The flat config map of that staging copy."""
    return dict(read_stack_config(managed_group_project, "staging").values)


@pytest.fixture(scope="session")
def managed_group_plan(managed_group_project: Path) -> Plan:
    return synthesize("staging", managed_group_project / "out", managed_group_project)


# --- the fast path: `make test-fast` runs `pytest -m "not slow"` ----------------------------------------------
# A test is slow when it needs a synthesized plan (its own synth, or a fixture's, however deep), runs the whole
# program under mocks (`run_program`) or needs a scratch copy of the program, or when it starts a subprocess itself
# (a linter, bash, a synth, the policy server). "Itself" includes the helpers of its module it calls.
SLOW_FIXTURES = frozenset(
    {
        "staging_synth",
        "staging_plan",
        "prod_plan",
        "plans",
        "project_copy",
        "managed_group_project",
        "managed_group_config",
        "managed_group_plan",
        "checkov_bin",
        "checkov_run",
        "analyzer",
        "fake_aws",  # the preflight's AWS CLI: a script started for every call (tests/preflight/test_preflight_aws.py)
    }
)
SLOW_CALL = re.compile(
    r"\b(subprocess\.|run_synth\(|synthesize\(|run_program\(|registered_transforms\(|_policy_check\(|run_prepull\(|getfixturevalue\()"
)


@functools.cache
def _makes_slow_calls(function: object) -> bool:
    try:
        source = inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return False
    return bool(SLOW_CALL.search(source))


@functools.cache
def _module_helpers(function: object) -> list[object]:
    """Functions of the test's own module that `function` calls by name (one level: `_access_entry_urns(...)`)."""
    module = inspect.getmodule(function)
    try:
        source = inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return []
    called = set(re.findall(r"\b(\w+)\(", source))
    return [
        helper
        for name in called
        if inspect.isfunction(helper := getattr(module, name, None))
        and helper.__module__ == getattr(module, "__name__", "")
    ]


def _is_slow(item: pytest.Item) -> bool:
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & SLOW_FIXTURES:
        return True
    functions = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    for name in fixtures:
        functions += [definition.func for definition in (info.name2fixturedefs.get(name, ()) if info else ())]
    functions += [helper for function in functions if function is not None for helper in _module_helpers(function)]
    return any(_makes_slow_calls(function) for function in functions if function is not None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `slow` every test that uses a slow fixture (directly or through another) or runs a subprocess."""
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Collection imported the SDKs: out of the collector's reach (offline/speed.py)."""
    speed.freeze_the_heap()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each mocked run cancels what an earlier run left pending (`install_mocks`); the last run's leftovers go here,
    before a pytest-xdist worker exits and prints "Task was destroyed but it is pending!" for each of them."""
    discard_pending_tasks()


@pytest.fixture
def reset_runtime() -> Iterator[None]:
    """After a test that installed mocks itself: no Pulumi runtime state leaks into the next one."""
    yield
    pulumi.runtime.settings.reset_options()
