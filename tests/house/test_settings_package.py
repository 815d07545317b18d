"""The settings package stays at the bottom: every module of `components/settings/` imports only its siblings and
the fact modules (never a component or a renderer, not even under TYPE_CHECKING), so any layer may read settings
and settings never reads back up; and callers keep importing every name from `components.settings`.
No folder of it holds more than 12 modules. (tests/house/test_module_size.py holds each module to 500 lines,
tests/house/test_renderer_boundary.py the layers at large.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import components.settings
from tests.conftest import PROJECT_DIR, parsed

PACKAGE = PROJECT_DIR / "components" / "settings"
# The facts settings may read: constants, the instance catalog, cron, quantities, node allocatable, pod requests and the
# timetable arithmetic. None of them imports settings (checked below).
FACTS = frozenset(
    {"components.facts"}
    | {
        f"components.facts.{name}"
        for name in (
            "constants",
            "gpu_catalog",
            "cron",
            "quantity",
            "node_allocatable",
            "pod_requests",
            "timetable",
        )
    }
)
# Where callers live: every `from components.settings import X` there must keep working.
CALLERS = ("components", "offline", "policy", "tests", "bench", "__main__.py", "synth.py", "preflight.py")


def project_imports(source: str, package: str) -> set[str]:
    """The `components...` modules `source` (a module of `package`) imports, relative imports resolved.

    `from components.facts import gpu_catalog` counts `components.facts.gpu_catalog`; `from .fields import X` in
    `components.settings` counts `components.settings.fields`.
    """
    found: set[str] = set()
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            if module in ("components", "components.facts") or (node.level and not node.module):
                found.update(f"{module}.{alias.name}" for alias in node.names)
            else:
                found.add(module)
    return {name for name in found if name == "components" or name.startswith("components.")}


def reaches_up(source: str, package: str = "components.settings") -> list[str]:
    """Imports of a settings module that are neither the settings package nor a fact module."""
    return sorted(
        name
        for name in project_imports(source, package)
        if name not in FACTS and not (name == "components.settings" or name.startswith("components.settings."))
    )


def _settings_modules() -> list[Path]:
    """Every module of the package, its subpackages' (`checks/`) included."""
    return sorted(path for path in PACKAGE.rglob("*.py") if "__pycache__" not in path.parts)


def _caller_files() -> list[Path]:
    files: list[Path] = []
    for entry in CALLERS:
        path = PROJECT_DIR / entry
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return [path for path in files if PACKAGE not in path.parents]


def test_the_package_has_its_modules() -> None:
    names = {path.relative_to(PACKAGE).with_suffix("").as_posix() for path in _settings_modules()}
    assert {"__init__", "fields", "stack", "resolved", "checks/__init__", "loading", "errors"} <= names
    assert not (PROJECT_DIR / "components" / "settings.py").exists(), "settings is a package now"


def test_settings_imports_only_itself_and_the_facts() -> None:
    found = {
        path.relative_to(PACKAGE).as_posix(): up
        for path in _settings_modules()
        if (up := reaches_up(path.read_text(encoding="utf-8"), "components.settings"))
    }
    assert found == {}, "settings is the bottom layer: read facts, never a component or a renderer"


def test_the_facts_never_import_settings() -> None:
    """The facts settings reads stay below it: none imports settings (or anything but other facts)."""
    for fact in sorted(FACTS - {"components.facts"}):
        path = PROJECT_DIR.joinpath(*fact.split(".")).with_suffix(".py")
        assert project_imports(path.read_text(encoding="utf-8"), "components.facts") <= FACTS, fact


def test_the_check_sees_an_import_running_back_up() -> None:
    source = (
        "from components.facts import gpu_catalog\n"
        "from components import labs\n"
        "from components.renderers.device_plugin.device_plugin_config import render_config\n"
        "from components.settings.fields import DnsLabel\n"
        "from .stack import StackSettings\n"
        "from ..karpenter import Karpenter\n"
        "from . import rules\n"
        "import components.cluster\n"
        "import json\n"
    )
    assert reaches_up(source) == [
        "components.cluster", "components.karpenter", "components.labs", "components.renderers.device_plugin.device_plugin_config",
    ]  # fmt: skip
    assert project_imports(source, "components.settings") >= {
        "components.settings.stack", "components.settings.rules", "components.facts.gpu_catalog",
    }  # fmt: skip


def test_every_name_callers_import_from_settings_is_exported() -> None:
    """`from components.settings import X` keeps working for every X a caller uses (re-exported in __init__)."""
    wanted = {
        alias.name
        for path in _caller_files()
        for node in ast.walk(parsed(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "components.settings"
        for alias in node.names
    }
    assert {"StackSettings", "load_settings", "SettingsError"} <= wanted
    assert sorted(wanted - set(components.settings.__all__)) == []
    assert all(hasattr(components.settings, name) for name in components.settings.__all__)
