"""Run `__main__.py` for one stack under recording mocks: no CLI, no credentials, no network."""

from __future__ import annotations

import asyncio
import itertools
import json
import runpy
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime import settings as runtime_settings
from pulumi.runtime.proto import source_pb2

from components.resources.runtime_settings import handed_over
from components.settings import StackSettings, config_key, load_settings
from offline.config_files import StackConfig
from offline.mocks import PlatformMocks, RecordingMonitor, Registration


@dataclass(frozen=True)
class Recording:
    stack: str
    settings: StackSettings
    registrations: list[Registration]
    hidden: dict[str, str]  # urn of a remote component's child -> the component's urn
    program_order: dict[str, int]  # urn -> position in the order the program constructed it


def install_mocks(
    project: str,
    stack: str,
    region: str,
    config: dict[str, str],
    secret_keys: list[str],
    caller_principal_arn: str | None = None,
) -> RecordingMonitor:
    """Fresh runtime state, config and mocks: nothing leaks from an earlier run or test.

    The mocked credentials belong to `caller_principal_arn`, by default the stack's configured
    deployer: the synth models the intended `pulumi up`, so the deployer check stays quiet.
    """
    discard_pending_tasks()  # what an earlier run that stopped (a RunError) left waiting on this loop
    _open_event_loop()
    _skip_source_positions()
    runtime_settings.reset_options(project=project, stack=stack, preview=False)
    pulumi.runtime.set_all_config(dict(config), secret_keys)
    caller = caller_principal_arn or _configured_deployer(config)
    mocks = PlatformMocks(region=region, stack=stack, project=project, caller_principal_arn=caller)
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    return monitor


def _no_stack_trace() -> source_pb2.StackTrace:
    return source_pb2.StackTrace()


def _skip_source_positions() -> None:
    """Register resources without the Python stack they were constructed on.

    The engine shows that position in its diagnostics; the mocks never read it (nothing in the plan comes from it),
    and capturing it walks and formats the whole stack once per registration: a sixth of a mocked run, more under
    pytest's deep stacks. `pulumi.runtime.resource._get_stack_trace` (pulumi 3.x) is the SDK's one place for it;
    if a new SDK drops it, this fails loudly rather than silently slowing down.
    """
    if not hasattr(runtime_resource, "_get_stack_trace"):
        raise RuntimeError("pulumi.runtime.resource._get_stack_trace is gone: update offline/runner.py")
    runtime_resource._get_stack_trace = _no_stack_trace


def _configured_deployer(config: dict[str, str]) -> str | None:
    cluster = json.loads(config.get(config_key("cluster"), "{}"))
    deployer = cluster.get("deployerPrincipalArn") if isinstance(cluster, dict) else None
    return deployer if isinstance(deployer, str) else None


def record_program(project_dir: Path | str, stack: str, config: StackConfig, settings: StackSettings) -> Recording:
    """Run the program for `stack` with the config its stack file gives (`read_stack_config`, read once).

    `settings` are that config's, validated once before anything runs (`checked_settings`: a bad config never
    registers a resource); the program reads them instead of validating the same config again.
    """
    project_dir = Path(project_dir).resolve()
    monitor = install_mocks(config.project, stack, settings.region, config.values, list(config.secret_keys))
    if str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))

    @pulumi.runtime.test
    def run() -> None:
        runpy.run_path(str(project_dir / "__main__.py"), run_name="__main__")

    with constructor_order() as constructed, handed_over(settings):
        run()
    return Recording(
        stack=stack,
        settings=settings,
        registrations=list(monitor.registrations),
        hidden=dict(monitor.hidden),
        program_order=_positions(monitor.registrations, constructed),
    )


def checked_settings(config: StackConfig) -> StackSettings:
    """The stack's settings, checked as `pulumi up` checks them (`secure:` values by their full path)."""
    return load_settings(config.values, config.secret_paths)


def close_event_loop() -> None:
    """Close the event loop the mocks ran on, before interpreter shutdown.

    `pulumi.runtime.test` runs the program on the thread's default loop and leaves it open; a loop
    collected during shutdown closes itself in `BaseEventLoop.__del__` after its selector is gone
    and prints "Exception ignored ... Invalid file descriptor". Closing it here keeps stderr clean.
    """
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # no loop on this thread: nothing ran, or it was closed already
        return
    if loop.is_closed():
        return
    discard_pending_tasks()
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.run_until_complete(loop.shutdown_default_executor())
    loop.close()


def discard_pending_tasks() -> int:
    """Cancel what a stopped run left pending on this thread's loop, and let the cancellations finish.

    A program that raises (a config mistake: RunError) leaves the runtime's registration tasks waiting on inputs
    that never resolve. Left alone they are collected at interpreter exit with a "Task was destroyed but it is
    pending!" line each (hundreds in a pytest-xdist worker). Returns how many were pending.
    """
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:  # no loop on this thread: nothing ran
        return 0
    if loop.is_closed() or loop.is_running():
        return 0
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    return len(pending)


def _open_event_loop() -> None:
    """A usable loop for this run: the previous run (in this process) closed its own."""
    try:
        loop = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        loop = None
    if loop is None or loop.is_closed():
        asyncio.set_event_loop(asyncio.new_event_loop())


@contextmanager
def constructor_order() -> Iterator[dict[tuple[str, str], list[int]]]:
    """Record the order resource constructors run: the program's registration order.

    Constructors run synchronously as the program reads; the mock monitor instead receives each
    registration when its inputs resolve, which interleaves differently from run to run.
    """
    constructed: dict[tuple[str, str], list[int]] = {}
    counter = itertools.count()
    original = pulumi.Resource.__init__

    def recording_init(self: pulumi.Resource, t: str, name: str, *args: Any, **kwargs: Any) -> None:
        constructed.setdefault((t, name), []).append(next(counter))
        original(self, t, name, *args, **kwargs)

    pulumi.Resource.__init__ = recording_init  # type: ignore[method-assign]
    try:
        yield constructed
    finally:
        pulumi.Resource.__init__ = original  # type: ignore[method-assign]


def _positions(registrations: list[Registration], constructed: dict[tuple[str, str], list[int]]) -> dict[str, int]:
    pending = {key: list(positions) for key, positions in constructed.items()}
    return {r.urn: pending[(r.type, r.name)].pop(0) for r in registrations}
