"""The test suite stays findable (docs/testing.md): test modules import helpers, never each other; the project
folder is defined once; every helper module is listed in docs/testing.md.

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
    assert imported_test_modules("from tests.support.k8s_validation import tolerates\nfrom tests.support import golden") == []
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


def test_every_helper_module_is_listed_in_the_testing_doc() -> None:
    doc = TESTING_DOC.read_text(encoding="utf-8")
    helpers = [
        path.relative_to(PROJECT_DIR).as_posix()
        for path in _python_files()
        if not is_test_module(path) and path.name not in ("__init__.py", "conftest.py")
    ]
    assert helpers, "tests/ has helper modules"
    assert [helper for helper in helpers if f"`{helper}`" not in doc] == []
