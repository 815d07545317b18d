"""The boundary between pure renderers and resource-creating components is structural, not a habit.

Everything under `components/renderers/` is pure: no module there imports Pulumi or a Pulumi
provider SDK, directly or through the project modules it imports (settings, constants, catalogs).

And no import runs back up a layer. The layers, bottom to top:

1. facts: `components/facts/*` (and the `components` package itself);
2. settings: `components.settings`, a module or a package (`components/settings/__init__.py` + submodules);
3. renderers: `components/renderers/*`;
4. resource helpers: `components/resources/*` (single resources or small groups, no ComponentResource);
5. component resources: the modules directly in `components/`, one ComponentResource each;
6. composition: `__main__.py`;
7. the tools around the program (`offline/`, `policy/`, `bench/`, `synth.py`, `tests/`, ...), which nothing in
   the program imports.

So the path alone says what a module is (`test_the_path_says_what_a_module_is`).

A module may import its own layer and the layers below it. Imports are read from the source (relative ones
resolved, those under `if TYPE_CHECKING:` and inside functions included): a dependency is a dependency.
"""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_DIR, parsed, program_files

RENDERERS = PROJECT_DIR / "components" / "renderers"
PULUMI_PACKAGES = ("pulumi", "pulumi_aws", "pulumi_eks", "pulumi_kubernetes", "pulumi_policy")


def _module_path(module: str) -> Path | None:
    """The project file of a dotted module name, or None for a third-party/stdlib module."""
    base = PROJECT_DIR.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path) -> str:
    """The dotted name of a project file (`components/settings/__init__.py` -> `components.settings`)."""
    parts = path.relative_to(PROJECT_DIR).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, path: Path) -> str | None:
    """The module a `from ... import` names, a relative one resolved against the file's package."""
    if node.level == 0:
        return node.module
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    if node.level - 1 > len(package):
        return None
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base) or None


@functools.cache  # each file is parsed once per session, however many walks pass through it
def imported_modules(path: Path) -> frozenset[str]:
    """Every module a file imports (`from a.b import c` counts `a.b` and, if it is a module, `a.b.c`)."""
    found: set[str] = set()
    for node in ast.walk(parsed(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and (module := _absolute(node, path)):
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names if _module_path(f"{module}.{alias.name}"))
    return frozenset(found)


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


RENDERER_FILES = sorted(p for p in RENDERERS.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", RENDERER_FILES, ids=lambda p: p.relative_to(RENDERERS).as_posix())
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


SETTINGS = PROJECT_DIR / "components" / "settings"
SETTINGS_FILES = sorted(p for p in SETTINGS.rglob("*.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("path", SETTINGS_FILES, ids=lambda p: p.relative_to(SETTINGS).as_posix())
def test_settings_module_reaches_no_pulumi_import(path: Path) -> None:
    """The settings package is pure too: the synth validates a stack before Pulumi is imported."""
    assert pulumi_imports(path) == []


def _modules_outside_renderers() -> dict[str, list[Path]]:
    """Each module of `components/` outside `renderers/`: a file, or a package (all its files) by its name."""
    found: dict[str, list[Path]] = {}
    for path in sorted((PROJECT_DIR / "components").iterdir()):
        if path.suffix == ".py" and path.stem != "__init__":
            found[path.stem] = [path]
        elif path.is_dir() and path.name != "renderers" and (path / "__init__.py").is_file():
            found[path.name] = sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
    return found


def test_every_component_module_outside_renderers_creates_resources_or_is_a_fact() -> None:
    """Pure modules outside `renderers/` are the settings layer (a package) and the shared facts, nothing else."""
    pure_outside = sorted(
        name for name, files in _modules_outside_renderers().items() if not any(pulumi_imports(p) for p in files)
    )
    assert pure_outside == ["facts", "settings"]


def test_there_are_renderers_to_check() -> None:
    assert len(RENDERER_FILES) >= 15


# --- layers: no import runs back up ------------------------------------------------------------------------------

LAYERS = ("facts", "settings", "renderers", "resource helpers", "component resources", "composition", "tools")


def layer_of(module: str) -> int | None:
    """The layer (index into LAYERS) of a project module by dotted name; None for stdlib and third-party ones."""
    parts = module.split(".")
    if parts[0] == "components":
        if len(parts) == 1 or parts[1] == "facts":
            return LAYERS.index("facts")
        if parts[1] in ("settings", "renderers"):
            return LAYERS.index(parts[1])
        if parts[1] == "resources":
            return LAYERS.index("resource helpers")
        return LAYERS.index("component resources")
    if module == "__main__":
        return LAYERS.index("composition")
    return LAYERS.index("tools") if _module_path(module) is not None else None


def upward_imports(path: Path) -> list[str]:
    """Imports of `path` that run up a layer, as 'file (layer) imports module (layer)'."""
    own = layer_of(module_name(path))
    assert own is not None, path
    return [
        f"{path.relative_to(PROJECT_DIR)} ({LAYERS[own]}) imports {module} ({LAYERS[layer]})"
        for module in sorted(imported_modules(path))
        if (layer := layer_of(module)) is not None and layer > own
    ]


PROGRAM_FILES = [
    *sorted(p for p in (PROJECT_DIR / "components").rglob("*.py") if "__pycache__" not in p.parts),
    PROJECT_DIR / "__main__.py",
]


@pytest.mark.parametrize("path", PROGRAM_FILES, ids=lambda p: p.relative_to(PROJECT_DIR).as_posix())
def test_no_import_runs_back_up_a_layer(path: Path) -> None:
    assert upward_imports(path) == []


def test_every_layer_holds_modules() -> None:
    layers = {LAYERS[layer] for path in PROGRAM_FILES if (layer := layer_of(module_name(path))) is not None}
    assert layers == set(LAYERS[:-1])
    assert layer_of("offline.plan") == layer_of("tests.conftest") == LAYERS.index("tools")
    assert layer_of("pulumi") is None and layer_of("json") is None


def test_settings_is_one_layer_as_a_module_or_a_package() -> None:
    settings = LAYERS.index("settings")
    assert layer_of("components.settings") == layer_of("components.settings.sections") == settings
    assert layer_of("components.renderers.hub.hub_values") == LAYERS.index("renderers")
    assert layer_of("components.facts.gpu_catalog") == layer_of("components") == LAYERS.index("facts")


def test_the_check_sees_an_import_that_runs_back_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fact importing settings, settings importing a renderer (relatively, from a package), a renderer importing a
    component, and a component importing offline/ are each caught; imports down the layers are not."""
    root = tmp_path / "project"
    (root / "components" / "settings").mkdir(parents=True)
    (root / "components" / "renderers").mkdir()
    (root / "components" / "facts").mkdir()
    (root / "components" / "resources").mkdir()
    (root / "offline").mkdir()
    files = {
        "components/__init__.py": "",
        "components/facts/constants.py": "from components.settings import StackSettings\n",
        "components/settings/__init__.py": "from .sections import StackSettings\n",
        "components/settings/sections.py": "from ..renderers import demo\nfrom components.facts import constants\n",
        "components/resources/node_role.py": "import pulumi\nfrom components.renderers import demo\nimport components.cluster\n",
        "components/renderers/__init__.py": "",
        "components/renderers/demo.py": "from components.settings import StackSettings\nimport components.cluster\n",
        "components/cluster.py": "import pulumi\nfrom components.renderers import demo\nfrom offline import plan\n",
        "offline/__init__.py": "",
        "offline/plan.py": "import components.cluster\n",
        "__main__.py": "from components.cluster import Cluster\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PROJECT_DIR", root)
    found = {name: upward_imports(root / name) for name in files if not name.startswith("offline/")}
    assert found == {
        "components/__init__.py": [],
        "components/facts/constants.py": [
            "components/facts/constants.py (facts) imports components.settings (settings)"
        ],
        "components/settings/__init__.py": [],
        "components/settings/sections.py": [
            "components/settings/sections.py (settings) imports components.renderers (renderers)",
            "components/settings/sections.py (settings) imports components.renderers.demo (renderers)",
        ],
        "components/resources/node_role.py": [
            "components/resources/node_role.py (resource helpers) imports components.cluster (component resources)"
        ],
        "components/renderers/__init__.py": [],
        "components/renderers/demo.py": [
            "components/renderers/demo.py (renderers) imports components.cluster (component resources)"
        ],
        "components/cluster.py": [
            "components/cluster.py (component resources) imports offline (tools)",
            "components/cluster.py (component resources) imports offline.plan (tools)",
        ],
        "__main__.py": [],
    }


def _component_classes(path: Path) -> list[str]:
    """Classes in `path` that subclass a ComponentResource (`pulumi.ComponentResource` or `ComponentResource`)."""
    tree = parsed(path.read_text(encoding="utf-8"))
    return [
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base).endswith("ComponentResource") for base in node.bases)
    ]


def test_the_path_says_what_a_module_is() -> None:
    """`components/*.py`: one ComponentResource each; `components/resources/`: resources without one; facts,
    settings and renderers: pure (tested above)."""
    components = PROJECT_DIR / "components"
    direct = sorted(p for p in components.glob("*.py") if p.stem != "__init__")
    assert direct and {p.name: len(_component_classes(p)) for p in direct} == {p.name: 1 for p in direct}
    helpers = sorted(p for p in (components / "resources").glob("*.py") if p.stem != "__init__")
    assert helpers and all(_component_classes(p) == [] for p in helpers)
    assert all(pulumi_imports(p) for p in helpers), "resource helpers create resources (or read Pulumi config)"


# --- renderers take the narrow arguments they read -----------------------------------------------------------------
# A renderer is given a pool, its sharing, the resolved model's pools (`ResolvedPool`, `KarpenterPool`,
# `ResolvedStack`) or a section; never the whole stack, so a reader sees from its signature what an object depends on. The one module
# below the components that returns the whole stack is the one that loads it from the Pulumi config.
WHOLE_STACK_LOADERS = {PROJECT_DIR / "components" / "resources" / "runtime_settings.py"}


def mentions_whole_stack(path: Path) -> list[int]:
    """Lines of `path` that name `StackSettings` in code: an import, an annotation (quoted too), a call."""
    tree = parsed(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
    }
    lines = set()
    for node in ast.walk(tree):
        named = (
            (isinstance(node, ast.Name) and node.id == "StackSettings")
            or (isinstance(node, ast.Attribute) and node.attr == "StackSettings")
            or (isinstance(node, ast.ImportFrom) and any(alias.name == "StackSettings" for alias in node.names))
            or (isinstance(node, ast.Constant) and "StackSettings" in str(node.value) and id(node) not in docstrings)
        )
        if named and isinstance(node, ast.expr | ast.stmt):
            lines.add(node.lineno)
    return sorted(lines)


NARROW_MODULES = [
    path
    for folder in ("renderers", "resources")
    for path in sorted((PROJECT_DIR / "components" / folder).rglob("*.py"))
    if path not in WHOLE_STACK_LOADERS and "__pycache__" not in path.parts
]


@pytest.mark.parametrize("path", NARROW_MODULES, ids=lambda p: p.relative_to(PROJECT_DIR / "components").as_posix())
def test_renderers_and_resource_helpers_take_narrow_arguments(path: Path) -> None:
    assert mentions_whole_stack(path) == [], f"{path.name} names StackSettings: pass the sections or a view instead"


def test_the_check_sees_the_whole_stack_passed_in(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from components.settings import StackSettings\n\n"
        "def a(settings: StackSettings) -> int:\n    return 1\n\n"
        "def b(settings: 'StackSettings') -> int:\n    '''Not StackSettings: a docstring may say the word.'''\n    return 2\n",
        encoding="utf-8",
    )
    assert mentions_whole_stack(probe) == [1, 3, 6]


# --- no circle: no module reaches itself through what it imports ------------------------------------------------

SOURCE_FILES = program_files()


def import_circles(files: list[Path]) -> list[list[str]]:
    """Each circle of imports among `files` (type-only and in-function imports counted), as module names: the
    strongly connected components of the import graph with more than one module, or one that imports itself."""
    inside = set(files)
    graph = {
        module_name(p): sorted({module_name(t) for m in imported_modules(p) if (t := _module_path(m)) in inside})
        for p in files
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1 or node in graph.get(node, []):
                circles.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(circles)


def test_no_import_circle_counting_type_only_imports() -> None:
    """A circle, even one only `if TYPE_CHECKING:` closes, is one more thing a reader must hold in their head."""
    assert import_circles(SOURCE_FILES) == []


def test_the_check_sees_a_type_only_circle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import B\n",
        "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n",
        "pkg/c.py": "from pkg import a\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PROJECT_DIR", root)
    assert import_circles(sorted(root.rglob("*.py"))) == [["pkg.a", "pkg.b"]]


# --- the summary reads the resolved model, not the components ----------------------------------------------------


def reached_modules(path: Path, seen: set[Path] | None = None) -> set[str]:
    """Every project module `path` reaches through its imports, itself excluded."""
    seen = seen if seen is not None else {path}
    found: set[str] = set()
    for module in imported_modules(path):
        target = _module_path(module)
        if target is not None and target not in seen:
            seen.add(target)
            found.add(module_name(target))
            found |= reached_modules(target, seen)
    return found


def test_the_summary_reaches_no_component_resource_module() -> None:
    """The synth summary prints what the resolved model and the plan say; a ComponentResource module behind it would
    mean a fact is worked out where resources are made. (It reaches one resource helper, the runtime glue that hands
    the synth's validated settings to the program run: `offline/runner.py`.)"""
    summary = PROJECT_DIR / "offline" / "summary.py"
    reached = reached_modules(summary)
    assert sorted(m for m in reached if layer_of(m) == LAYERS.index("component resources")) == []
    helpers = sorted(m for m in reached if layer_of(m) == LAYERS.index("resource helpers"))
    assert helpers == ["components.resources.runtime_settings"]


def test_the_reach_check_sees_a_component_behind_a_helper() -> None:
    assert "components.cluster" in reached_modules(PROJECT_DIR / "__main__.py")
    assert "components.settings.resolved" in reached_modules(PROJECT_DIR / "offline" / "summary.py")
