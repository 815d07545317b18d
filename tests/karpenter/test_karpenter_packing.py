"""The Karpenter packing model: how many nodes, of which type, one batch of pending GPU pods opens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.facts import gpu_catalog
from components.renderers.karpenter import karpenter_packing as packing
from components.settings import SettingsError, StackSettings
from components.settings.checks.fit_placement import group_fits
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.summary import render_summary
from tests.support.settings import DELETE, settings_for


def _first_batch_rows(settings: StackSettings) -> list[packing.FirstBatchRow]:
    return packing.first_batch_rows(settings.karpenter, settings.demo, settings.resolved)


def test_staging_first_batch_gets_one_g4dn_xlarge_per_three_slots() -> None:
    settings = settings_for("staging")
    (row,) = _first_batch_rows(settings)
    # Pulumi.staging.yaml: demo.replicas 3 (managed group off), warmGpuSlots 3, time-slicing x3 on 1-GPU types.
    assert (row.pool, row.demo_slots, row.warm_slots) == ("g4-nodepool", 3, 3)
    assert [(node.instance_type, node.slots) for node in row.nodes] == [("g4dn.xlarge", 3), ("g4dn.xlarge", 3)]
    assert packing.mixed_gpu_count_warnings(settings.karpenter) == []


def test_a_pool_mixing_1_and_4_gpu_types_buys_the_4_gpu_node_for_six_slots() -> None:
    # The staging pool as it was (now only with the opt-in): the 6 slots stay on one NodeClaim, whose only
    # remaining type is 4 GPUs.
    settings = settings_for(
        "staging", pool={"instanceTypes": ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.12xlarge"], "allowMixedGpuCounts": True}
    )
    (row,) = _first_batch_rows(settings)
    assert [(node.instance_type, node.slots, node.options) for node in row.nodes] == [
        ("g4dn.12xlarge", 6, ("g4dn.12xlarge",))
    ]
    (warning,) = packing.mixed_gpu_count_warnings(settings.karpenter)
    assert "g4-nodepool" in warning and "1, 4 GPUs" in warning and "g4dn.12xlarge" in warning


def test_a_batch_beyond_the_big_node_opens_a_second_claim() -> None:
    slots = {"g4dn.xlarge": 3, "g4dn.12xlarge": 12}
    nodes = packing.pack([1] * 14, slots)
    assert [(node.instance_type, node.slots) for node in nodes] == [("g4dn.12xlarge", 12), ("g4dn.xlarge", 2)]


def test_a_batch_that_fits_one_small_node_launches_the_cheapest_type() -> None:
    nodes = packing.pack([1, 1], {"g4dn.12xlarge": 12, "g4dn.2xlarge": 3, "g4dn.xlarge": 3})
    assert [(node.instance_type, node.options) for node in nodes] == [
        ("g4dn.xlarge", ("g4dn.xlarge", "g4dn.2xlarge", "g4dn.12xlarge"))
    ]


def test_a_pod_no_type_holds_is_an_error() -> None:
    with pytest.raises(ValueError, match="no instance type holds a pod of 4 slots"):
        packing.pack([4], {"g4dn.xlarge": 3})


def test_prod_pools_hold_one_gpu_count_each() -> None:
    # Prod's pools were instanceFamilies [g4dn] and [g5] (1-, 4- and 8-GPU types): now 1-GPU types only.
    settings = settings_for("prod")
    assert packing.mixed_gpu_count_warnings(settings.karpenter) == []
    for pool in settings.karpenter.node_pools:
        assert {gpu_catalog.gpu_count(t) for t in pool.selected_instance_types} == {1}, pool.name


@pytest.mark.parametrize(
    ("selector", "key", "counts"),
    [
        ({"instanceTypes": ["g4dn.xlarge", "g4dn.12xlarge"]}, "instanceTypes", "1 GPU(s): g4dn.xlarge; 4 GPU(s)"),
        (
            {"instanceTypes": DELETE, "instanceFamilies": ["g5"]},
            "instanceFamilies",
            "4 GPU(s): g5.12xlarge, g5.24xlarge; 8",
        ),
    ],
)
def test_a_pool_mixing_gpu_counts_is_an_error_at_its_selector(selector: dict[str, Any], key: str, counts: str) -> None:
    with pytest.raises(SettingsError) as caught:
        settings_for("staging", pool=selector)
    ((path, message),) = caught.value.problems
    assert path == f"gpu-platform:karpenter.nodePools[0].{key}"
    assert counts in message and "allowMixedGpuCounts: true" in message


def test_the_opt_in_on_a_pool_of_one_gpu_count_is_an_error() -> None:
    with pytest.raises(SettingsError) as caught:
        settings_for("staging", pool={"allowMixedGpuCounts": True})
    assert [path for path, _ in caught.value.problems] == ["gpu-platform:karpenter.nodePools[0].allowMixedGpuCounts"]


def test_summary_shows_the_first_batch_and_the_mixed_pool_warning(staging_plan: Plan) -> None:
    staging = settings_for("staging")
    lines = render_summary(
        staging, staging_plan, "staging", Path("out"), stack_forecast(staging), group_fits(staging)
    ).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("First batch per pool"))
    assert lines[start + 2].split() == ["g4-nodepool", "3", "3", "2", "g4dn.xlarge", "(3),", "g4dn.xlarge", "(3)"]
    mixed = settings_for(
        "staging", pool={"instanceTypes": ["g4dn.xlarge", "g4dn.12xlarge"], "allowMixedGpuCounts": True}
    )
    summary = render_summary(mixed, staging_plan, "staging", Path("out"), stack_forecast(mixed), group_fits(mixed))
    assert "g4-nodepool                     3          3      1  g4dn.12xlarge (6)" in summary
    assert "WARNING: pool g4-nodepool mixes instance types with 1, 4 GPUs" in summary
