"""The benchmarks' inputs stay valid as the staging stack grows: bench/run.py's generated stacks, bench/cost.py's designs."""

from __future__ import annotations

import importlib
import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from components.settings import load_settings
from offline.config_files import read_stack_config
from offline.plan import Plan
from tests.conftest import PROJECT_DIR


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_run", PROJECT_DIR / "bench" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("count", [1, 10, 50])
def test_every_pool_count_the_benchmark_synthesizes_is_a_valid_stack(tmp_path: Path, count: int) -> None:
    bench = _bench()
    base = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text(encoding="utf-8"))
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    stack_file = tmp_path / f"Pulumi.{bench.BENCH_STACK}.yaml"
    stack_file.write_text(yaml.safe_dump(bench.pools_stack(base, count), sort_keys=False), encoding="utf-8")
    config = read_stack_config(tmp_path, bench.BENCH_STACK)
    settings = load_settings(config.values, config.secret_keys)
    assert len(settings.karpenter.node_pools) == count


CRD_GROUPS = {"karpenter.sh", "karpenter.k8s.aws", "autoscaling.x-k8s.io"}


def test_the_floor_imports_the_sdk_class_of_every_resource_type_in_both_plans(plans: dict[str, Plan]) -> None:
    """The floor touches the class each plan type is created with: a built-in API group (storage.k8s.io,
    admissionregistration.k8s.io) is its own pulumi_kubernetes module, only CRD groups use CustomResource."""
    bench = _bench()
    types = {r["type"] for plan in plans.values() for r in plan.resources}
    for type_token in sorted(types):
        found = bench.sdk_class(type_token)
        if found is None:
            assert type_token.startswith("gpu-platform:") or type_token == "pulumi:pulumi:Stack", type_token
            continue
        module, name = found
        assert hasattr(importlib.import_module(module), name), type_token
        if type_token.startswith("kubernetes:") and type_token != "pulumi:providers:kubernetes":
            group = type_token.split(":")[1].split("/")[0]
            assert (module == "pulumi_kubernetes.apiextensions") == (group in CRD_GROUPS), type_token
            if group not in CRD_GROUPS:
                assert name == type_token.rsplit(":", 1)[1], type_token


def _cost_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_cost", PROJECT_DIR / "bench" / "cost.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cost_benchmark_compares_the_four_designs_on_one_trace() -> None:
    bench = _cost_bench()
    designs = bench.designs()
    platform, seed, fixed, z2jh, timetable_only = designs.values()
    assert fixed.fixed_nodes == 3  # 3 demo + 6 learner slots on 3-slot nodes
    assert seed.scoring == "LeastAllocated" and seed.expire_after_s == 7200 and not any(seed.buffer_week)
    assert set(z2jh.buffer_week) == {6} and platform.sessions == seed.sessions == z2jh.sessions
    assert min(timetable_only.buffer_week) == 0 and max(timetable_only.buffer_week) == 6
    results = {name: bench.forecast(plan) for name, plan in designs.items()}
    table = bench.table(results)
    assert len(table) == 2 + 5
    by_design = list(results.values())
    assert by_design[0].wait_in_session == (0, 0) and by_design[1].wait_in_session[1] > 0  # seed waits for boots
    assert by_design[4].dollars < by_design[0].dollars < by_design[2].dollars  # warm slots cost, fixed costs more
