"""The benchmark's generated stacks (bench/run.py) stay valid configurations as the staging stack grows."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from components.settings import load_settings
from offline.config_files import read_stack_config
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
