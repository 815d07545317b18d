"""One concern per module, and no module in `components/` is longer than 500 lines: a concern may be one longer
file (as the resolved model is), but never one a newcomer cannot read in one sitting.

A module that passes the limit is split along a real seam into modules whose names say what they hold, never cut at
an arbitrary line. Counted like `wc -l` over every `.py` file under components/, subpackages included.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PROJECT_DIR

COMPONENTS = PROJECT_DIR / "components"
MAX_MODULE_LINES = 500


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
    assert {"components/facts/constants.py", "components/cluster.py", "components/renderers/hub_values.py"} <= names
    assert len([name for name in names if name.startswith("components/renderers/")]) >= 15


def test_the_check_sees_a_long_module_in_a_subpackage(tmp_path: Path) -> None:
    package = tmp_path / "components" / "layer"
    package.mkdir(parents=True)
    (package / "at_limit.py").write_text("x = 1\n" * MAX_MODULE_LINES, encoding="utf-8")
    (package / "over_limit.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1), encoding="utf-8")
    assert oversized_modules(tmp_path / "components") == [("components/layer/over_limit.py", MAX_MODULE_LINES + 1)]
