"""One table of instance facts: GPUs, vCPUs, memory and ENI pod limits per instance type live in
`components/facts/gpu_catalog.py` only; everything else reads them from there.

A second table (a dict literal keyed by an instance type, a GPU family or an instance size, anywhere in the
program outside the catalog) is how two copies of a fact start to disagree, so it fails here. The one exception
is the price table (`components/facts/instance_prices.py`): prices are their own fact, with their own source
and date, and held there only.
"""

from __future__ import annotations

import ast

from components.facts import gpu_catalog
from tests.conftest import PROJECT_DIR, parsed, program_files

CATALOG = PROJECT_DIR / "components" / "facts" / "gpu_catalog.py"
PRICES = PROJECT_DIR / "components" / "facts" / "instance_prices.py"
INSTANCE_NAMES = frozenset(
    {
        *gpu_catalog.GPU_INSTANCE_TYPES,
        *gpu_catalog.GPU_FAMILIES,
        *(instance_type.partition(".")[2] for instance_type in gpu_catalog.GPU_INSTANCE_TYPES),
    }
)


def _instance_names_in(key: ast.expr | None) -> list[str]:
    """Instance types, families or sizes a dict key spells out (a string, or a tuple holding one)."""
    parts = key.elts if isinstance(key, ast.Tuple) else [key]
    return [p.value for p in parts if isinstance(p, ast.Constant) and p.value in INSTANCE_NAMES]


def instance_fact_tables(source: str) -> list[tuple[int, list[str]]]:
    """(line, instance names used as keys) of each dict literal keyed by instance names in `source`."""
    tables = []
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.Dict):
            names = [name for key in node.keys for name in _instance_names_in(key)]
            if names:
                tables.append((node.lineno, names))
    return tables


def test_no_table_of_instance_facts_outside_the_catalog() -> None:
    found = {
        f"{path.relative_to(PROJECT_DIR)}:{line}": names[:3]
        for path in program_files()
        if path not in (CATALOG, PRICES)
        for line, names in instance_fact_tables(path.read_text(encoding="utf-8"))
    }
    assert found == {}, "instance facts belong in components/facts/gpu_catalog.py (read them from there)"


def test_the_scan_reads_the_program_and_finds_the_catalog_tables() -> None:
    scanned = {path.relative_to(PROJECT_DIR).as_posix() for path in program_files()}
    assert {
        "components/settings/resolved.py",
        "components/settings/checks/pools.py",
        "offline/summary.py",
    } <= scanned
    # The catalog's own tables are what the scan recognises: families -> sizes, and types -> vCPUs/memory.
    assert len(instance_fact_tables(CATALOG.read_text(encoding="utf-8"))) >= 2


def test_a_second_table_is_found_whatever_it_is_keyed_by() -> None:
    """The table gpu_quota.py once held (vCPUs per size), and tables keyed by type, family or a tuple."""
    assert instance_fact_tables('_SIZE_VCPUS = {\n    "xlarge": 4, "2xlarge": 8, "metal": 96,\n}\n') == [
        (1, ["xlarge", "2xlarge", "metal"])
    ]
    assert instance_fact_tables('X = {"g5.xlarge": (4, 16)}') == [(1, ["g5.xlarge"])]
    assert instance_fact_tables('X = {("g6e", "48xlarge"): 192}') == [(1, ["g6e", "48xlarge"])]
    assert instance_fact_tables('X = {"on-demand": 1, "spot": 2}\nY = {"g": 1}') == []


def test_every_catalog_instance_type_has_all_its_facts() -> None:
    """Adding a size or a family to the catalog without its vCPUs and memory fails here, not at synth time."""
    for instance_type in gpu_catalog.GPU_INSTANCE_TYPES:
        assert gpu_catalog.gpu_count(instance_type) >= 1, instance_type
        assert gpu_catalog.eni_max_pods(instance_type) > 2, instance_type
        assert 0 < gpu_catalog.gpu_memory_mib(instance_type) <= gpu_catalog.gpu_model(instance_type).memory_mib
        if gpu_catalog.is_fractional(instance_type):  # g6f: 2-16 vCPUs, 8-64 GiB, one slice each
            assert gpu_catalog.vcpus(instance_type) >= 2, instance_type
            assert gpu_catalog.memory_mib(instance_type) >= 8 * 1024, instance_type
            assert gpu_catalog.reported_gpu_count(instance_type) == 0, instance_type
            continue
        assert gpu_catalog.reported_gpu_count(instance_type) == gpu_catalog.gpu_count(instance_type)
        assert gpu_catalog.gpu_memory_mib(instance_type) == gpu_catalog.gpu_model(instance_type).memory_mib
        assert gpu_catalog.vcpus(instance_type) >= 4 * gpu_catalog.gpu_count(instance_type), instance_type
        assert gpu_catalog.memory_mib(instance_type) >= 16 * 1024, instance_type
