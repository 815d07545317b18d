"""The boundary between pure renderers and resource-creating components is structural, not a habit.

Everything under `components/renderers/` is pure: no module there imports Pulumi or a Pulumi
provider SDK, directly or through the project modules it imports (settings, constants, catalogs). The settings
package `components/settings/` is pure too: it is the layer every other one reads.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR

RENDERERS = PROJECT_DIR / "components" / "renderers"
PULUMI_PACKAGES = ("pulumi", "pulumi_aws", "pulumi_eks", "pulumi_kubernetes", "pulumi_policy")


def _module_path(module: str) -> Path | None:
    """The project file of a dotted module name, or None for a third-party/stdlib module."""
    base = PROJECT_DIR.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports (`from a.b import c` counts `a.b` and, if it is a module, `a.b.c`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}" for alias in node.names if _module_path(f"{node.module}.{alias.name}")
            )
    return found


def pulumi_imports(path: Path, seen: set[Path] | None = None) -> list[str]:
    """Pulumi imports reachable from `path` through project modules, as 'file: module' chains."""
    seen = seen if seen is not None else set()
    if path in seen:
        return []
    seen.add(path)
    chains: list[str] = []
    for module in sorted(imported_modules(path)):
        if module.split(".")[0] in PULUMI_PACKAGES:
            chains.append(f"{path.relative_to(PROJECT_DIR)}: {module}")
        elif (target := _module_path(module)) is not None:
            chains += pulumi_imports(target, seen)
    return chains


RENDERER_FILES = sorted(RENDERERS.glob("*.py"))


@pytest.mark.parametrize("path", RENDERER_FILES, ids=lambda p: p.stem)
def test_renderer_reaches_no_pulumi_import(path: Path) -> None:
    assert pulumi_imports(path) == []


def test_the_check_sees_a_pulumi_import(tmp_path: Path) -> None:
    """The walker finds a direct Pulumi import and one behind a project module (here: a component)."""
    direct = tmp_path / "direct.py"
    direct.write_text("import pulumi_aws as aws\n", encoding="utf-8")
    assert imported_modules(direct) == {"pulumi_aws"}
    assert pulumi_imports(PROJECT_DIR / "components" / "cluster.py")
    indirect = PROJECT_DIR / "components" / "renderers" / "__init__.py"
    assert pulumi_imports(indirect) == []


SETTINGS_FILES = sorted((PROJECT_DIR / "components" / "settings").glob("*.py"))


@pytest.mark.parametrize("path", SETTINGS_FILES, ids=lambda p: p.stem)
def test_settings_module_reaches_no_pulumi_import(path: Path) -> None:
    """The settings package is the bottom layer: the synth validates a stack before Pulumi is imported."""
    assert pulumi_imports(path) == []


def _modules_outside_renderers() -> dict[str, list[Path]]:
    """Each module of `components/` outside `renderers/`: a file, or a package (all its files) by its name."""
    found: dict[str, list[Path]] = {}
    for path in sorted((PROJECT_DIR / "components").iterdir()):
        if path.suffix == ".py" and path.stem != "__init__":
            found[path.stem] = [path]
        elif path.is_dir() and path.name != "renderers" and (path / "__init__.py").is_file():
            found[path.name] = sorted(path.glob("*.py"))
    return found


def test_every_component_module_outside_renderers_creates_resources_or_is_a_fact() -> None:
    """Pure modules outside `renderers/` are the settings layer (a package) and the shared facts, nothing else."""
    pure_outside = sorted(
        name for name, files in _modules_outside_renderers().items() if not any(pulumi_imports(p) for p in files)
    )
    assert pure_outside == [
        "config_rules", "constants", "cron", "gpu_catalog", "node_allocatable", "quantity", "settings", "timetable",
    ]  # fmt: skip


def test_there_are_renderers_to_check() -> None:
    assert len(RENDERER_FILES) >= 15
