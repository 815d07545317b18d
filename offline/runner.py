"""Run `__main__.py` for one stack under recording mocks: no CLI, no credentials, no network."""

from __future__ import annotations

import runpy
import sys
from dataclasses import dataclass
from pathlib import Path

import pulumi
from pulumi.runtime import settings as runtime_settings

from components.settings import StackSettings, load_settings
from offline.config_files import read_stack_config
from offline.mocks import PlatformMocks, RecordingMonitor, Registration


@dataclass(frozen=True)
class Recording:
    stack: str
    settings: StackSettings
    registrations: list[Registration]
    hidden: dict[str, str]  # urn of a remote component's child -> the component's urn


def install_mocks(
    project: str, stack: str, region: str, config: dict[str, str], secret_keys: list[str]
) -> RecordingMonitor:
    """Fresh runtime state, config and mocks: nothing leaks from an earlier run or test."""
    runtime_settings.reset_options(project=project, stack=stack, preview=False)
    pulumi.runtime.set_all_config(dict(config), secret_keys)
    mocks = PlatformMocks(region=region, stack=stack, project=project)
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=False, monitor=monitor)
    return monitor


def record_program(project_dir: Path | str, stack: str) -> Recording:
    """Validate the stack's config (raises SettingsError / StackFileError), then run the program.

    Settings are checked before anything runs, so a bad config never registers a resource.
    """
    project_dir = Path(project_dir).resolve()
    config = read_stack_config(project_dir, stack)
    settings = load_settings(config.values)
    monitor = install_mocks(config.project, stack, settings.region, config.values, list(config.secret_keys))
    if str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))

    @pulumi.runtime.test
    def run() -> None:
        runpy.run_path(str(project_dir / "__main__.py"), run_name="__main__")

    run()
    return Recording(
        stack=stack, settings=settings, registrations=list(monitor.registrations), hidden=dict(monitor.hidden)
    )
