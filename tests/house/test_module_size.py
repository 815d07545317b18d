"""The sizes of the house: one concern per module, at most 500 lines, and at most 12 modules per folder.

A module holds one concern (the device plugin's DaemonSets, scaffold and MPS daemon are one module); one that
passes 500 lines is split along a real seam into modules whose names say what they hold, never cut at an
arbitrary line. A folder of `components/` that passes 12 modules is split by concern into subpackages (as
`renderers/` became `renderers/hub/`, `renderers/karpenter/`, ...). Lines are counted like `wc -l` over every
`.py` file under components/, subpackages included; `__init__.py` does not count as a module of its folder.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PROJECT_DIR

COMPONENTS = PROJECT_DIR / "components"
MAX_MODULE_LINES = 500
MAX_FOLDER_MODULES = 12


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def component_modules(root: Path = COMPONENTS) -> list[Path]:
    return sorted(path for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def oversized_modules(root: Path = COMPONENTS, limit: int = MAX_MODULE_LINES) -> list[tuple[str, int]]:
    """(path relative to `root`'s parent, lines) of each module under `root` longer than `limit` lines."""
    return [
        (path.relative_to(root.parent).as_posix(), lines)
        for path in component_modules(root)
        if (lines := line_count(path)) > limit
    ]


def test_no_component_module_passes_500_lines() -> None:
    offenders = oversized_modules()
    listed = "\n".join(f"  {path}: {lines} lines" for path, lines in offenders)
    assert offenders == [], f"modules over {MAX_MODULE_LINES} lines (split each along a real seam):\n{listed}"


def test_the_walk_reads_every_component_module() -> None:
    names = {path.relative_to(PROJECT_DIR).as_posix() for path in component_modules()}
    assert {"components/facts/constants.py", "components/cluster.py", "components/renderers/hub/hub_values.py"} <= names
    assert len([name for name in names if name.startswith("components/renderers/")]) >= 15


def test_the_check_sees_a_long_module_in_a_subpackage(tmp_path: Path) -> None:
    package = tmp_path / "components" / "layer"
    package.mkdir(parents=True)
    (package / "at_limit.py").write_text("x = 1\n" * MAX_MODULE_LINES, encoding="utf-8")
    (package / "over_limit.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1), encoding="utf-8")
    assert oversized_modules(tmp_path / "components") == [("components/layer/over_limit.py", MAX_MODULE_LINES + 1)]


def crowded_folders(root: Path = COMPONENTS, limit: int = MAX_FOLDER_MODULES) -> list[tuple[str, int]]:
    """(folder relative to `root`'s parent, modules) of each folder under `root` (itself included) holding more
    than `limit` modules, `__init__.py` not counted."""
    folders = [root, *sorted(p for p in root.rglob("*") if p.is_dir() and p.name != "__pycache__")]
    counts = [(f, len([m for m in f.glob("*.py") if m.name != "__init__.py"])) for f in folders]
    return [(f.relative_to(root.parent).as_posix(), n) for f, n in counts if n > limit]


def test_no_component_folder_holds_more_than_12_modules() -> None:
    offenders = crowded_folders()
    listed = "\n".join(f"  {path}/: {count} modules" for path, count in offenders)
    assert offenders == [], f"folders over {MAX_FOLDER_MODULES} modules (split by concern):\n{listed}"


def test_the_folder_check_counts_modules_not_the_package_file(tmp_path: Path) -> None:
    package = tmp_path / "components" / "layer"
    package.mkdir(parents=True)
    for i in range(MAX_FOLDER_MODULES):
        (package / f"m{i}.py").write_text("", encoding="utf-8")
    (package / "__init__.py").write_text("", encoding="utf-8")
    assert crowded_folders(tmp_path / "components") == []
    (package / "one_more.py").write_text("", encoding="utf-8")
    assert crowded_folders(tmp_path / "components") == [("components/layer", MAX_FOLDER_MODULES + 1)]
