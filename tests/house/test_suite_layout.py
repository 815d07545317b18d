"""The test suite stays findable (docs/testing.md): test modules import helpers, never each other; the project
folder is defined once; every test module sits in a concern folder and every helper in tests/support/, and
docs/testing.md lists each folder with its files and each helper module.

A test module importing another runs (and, under some import modes, collects) the other's tests twice and
hides shared helpers where nobody looks for them; shared code goes to conftest.py or a helper module.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import PROJECT_DIR, parsed

TESTS_DIR = PROJECT_DIR / "tests"
TESTING_DOC = PROJECT_DIR / "docs" / "testing.md"


def _python_files() -> list[Path]:
    return sorted(path for path in TESTS_DIR.rglob("*.py") if "__pycache__" not in path.parts)


def is_test_module(path: Path) -> bool:
    return path.name.startswith("test_")


def imported_test_modules(source: str, package: str = "tests") -> list[str]:
    """Test modules (`test_*`) that `source`, a module of `package`, imports, by dotted name."""
    found = []
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            anchor = parts[: len(parts) - node.level + 1] if node.level else []
            base = ".".join([*anchor, node.module] if node.module else anchor)
            # `from tests import test_demo` imports a module; `from tests.helpers import test_data` a name.
            modules = [f"{base}.{alias.name}" for alias in node.names if _is_module(f"{base}.{alias.name}")]
            names = [base, *modules]
        else:
            continue
        found += [name for name in names if name.split(".")[-1].startswith("test_")]
    return found


def _is_module(dotted: str) -> bool:
    return PROJECT_DIR.joinpath(*dotted.split(".")).with_suffix(".py").is_file()


def test_no_test_module_imports_another_test_module() -> None:
    found = {}
    for path in _python_files():
        package = ".".join(path.relative_to(PROJECT_DIR).parent.parts)
        if imported := imported_test_modules(path.read_text(encoding="utf-8"), package):
            found[str(path.relative_to(PROJECT_DIR))] = imported
    assert found == {}, "move what they share to tests/conftest.py or a helper module (docs/testing.md)"


def test_an_import_of_a_test_module_is_caught() -> None:
    assert imported_test_modules("from tests.settings.test_settings import _merged") == ["tests.settings.test_settings"]
    assert imported_test_modules("import tests.labs.test_demo") == ["tests.labs.test_demo"]
    assert imported_test_modules("from tests.labs import test_demo") == ["tests.labs.test_demo"]
    assert imported_test_modules("from . import test_demo", "tests.labs") == ["tests.labs.test_demo"]
    assert imported_test_modules("from .test_demo import X", "tests.plans") == ["tests.plans.test_demo"]
    assert (
        imported_test_modules("from tests.support.k8s_validation import tolerates\nfrom tests.support import golden")
        == []
    )
    assert imported_test_modules("from tests.support.config_corpus import test_cases") == []


def test_the_project_folder_is_defined_once() -> None:
    """`PROJECT_DIR` (and any other path built from `__file__` up to the project) lives in tests/conftest.py."""
    up_to_project = re.compile(r"Path\(__file__\)(\.resolve\(\))?\.parent\.parent")
    found = []
    for path in _python_files():
        if path == TESTS_DIR / "conftest.py":
            continue
        tree = parsed(path.read_text(encoding="utf-8"))
        assigned = {
            t.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
        }
        if "PROJECT_DIR" in assigned or up_to_project.search(path.read_text(encoding="utf-8")):
            found.append(str(path.relative_to(PROJECT_DIR)))
    assert found == [], "import PROJECT_DIR from tests.conftest"


def _concern_folders() -> list[Path]:
    """The packages under tests/ that hold test modules (every one but tests/support/)."""
    return sorted(
        path.parent
        for path in TESTS_DIR.glob("*/__init__.py")
        if path.parent.name != "support" and "__pycache__" not in path.parts
    )


def layout_rows(doc: str) -> dict[str, list[str]]:
    """docs/testing.md's folder table: folder name -> the file names its last cell lists."""
    rows = {}
    for line in doc.splitlines():
        if match := re.match(r"\| `tests/(\w+)/` \|.*\| ([^|]*) \|$", line):
            rows[match[1]] = re.findall(r"`(test_\w+\.py)`", match[2])
    return rows


def test_every_test_module_sits_in_a_concern_folder_and_every_helper_in_support() -> None:
    misplaced = []
    for path in _python_files():
        relative = path.relative_to(TESTS_DIR)
        if path.name == "__init__.py" or relative.as_posix() == "conftest.py":
            continue
        folder = relative.parts[0] if len(relative.parts) > 1 else ""
        if is_test_module(path) != (folder not in ("", "support")):
            misplaced.append(relative.as_posix())
    assert misplaced == [], "a test module goes to tests/<concern>/, a helper module to tests/support/"


def test_the_testing_doc_lists_every_test_folder_and_its_files() -> None:
    rows = layout_rows(TESTING_DOC.read_text(encoding="utf-8"))
    assert rows, "docs/testing.md has the folder table"
    wrong = []
    for folder in _concern_folders():
        files = sorted(path.name for path in folder.glob("test_*.py"))
        if rows.get(folder.name) != files:
            cells = ", ".join(f"`{name}`" for name in files)
            listed = "what it tests | the program folder it mirrors" if folder.name not in rows else "..."
            wrong.append(f"| `tests/{folder.name}/` | {listed} | {cells} |")
    stale = sorted(set(rows) - {folder.name for folder in _concern_folders()})
    assert wrong == [], "docs/testing.md 'Where a test goes': write these rows (or fix their files):\n" + "\n".join(
        wrong
    )
    assert stale == [], f"docs/testing.md lists folders tests/ no longer has: {stale}"


def test_every_helper_module_is_listed_in_the_testing_doc() -> None:
    doc = TESTING_DOC.read_text(encoding="utf-8")
    helpers = sorted(
        path.relative_to(PROJECT_DIR).as_posix()
        for path in (TESTS_DIR / "support").glob("*.py")
        if path.name != "__init__.py"
    )
    assert helpers, "tests/support/ has helper modules"
    missing = [f"| `{helper}` | what it holds |" for helper in helpers if f"| `{helper}` |" not in doc]
    assert missing == [], "docs/testing.md 'Shared code': add these rows to the helper table:\n" + "\n".join(missing)
