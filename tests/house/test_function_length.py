"""No function in the program's code is longer than 80 lines: constructors read as a list of named steps.

Counted from the `def` line to the function's last line (decorators and docstring included), by an AST walk
over components/, offline/, policy/ and synth.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import PROJECT_DIR, parsed

CHECKED = ("components", "offline", "policy", "synth.py")
MAX_FUNCTION_LINES = 80


def long_functions(source: str, limit: int = MAX_FUNCTION_LINES) -> list[tuple[str, int]]:
    """(name, length) of each function or method in `source` longer than `limit` lines."""
    return [
        (node.name, node.end_lineno - node.lineno + 1)
        for node in ast.walk(parsed(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > limit
    ]


def _checked_files() -> list[Path]:
    files: list[Path] = []
    for entry in CHECKED:
        path = PROJECT_DIR / entry
        files.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return files


def test_the_walk_reads_the_program() -> None:
    files = {path.relative_to(PROJECT_DIR).as_posix() for path in _checked_files()}
    assert {
        "synth.py",
        "components/cluster.py",
        "components/karpenter.py",
        "offline/plan.py",
        "policy/rules.py",
    } <= files


def test_no_function_is_longer_than_80_lines() -> None:
    found = {
        f"{path.relative_to(PROJECT_DIR)}:{name}": length
        for path in _checked_files()
        for name, length in long_functions(path.read_text(encoding="utf-8"))
    }
    assert found == {}


def _function(name: str, lines: int) -> str:
    """Source of a function `lines` long: the def line and `lines - 1` assignments."""
    return f"def {name}():\n" + "".join(f"    x{i} = {i}\n" for i in range(lines - 1))


def test_a_function_of_81_lines_is_reported_and_one_of_80_is_not() -> None:
    assert long_functions(_function("long", 81)) == [("long", 81)]
    assert long_functions(_function("fits", 80)) == []
    method = "class C:\n" + "".join(f"    {line}\n" for line in _function("method", 81).splitlines())
    assert long_functions(method) == [("method", 81)]
