"""The weekly cost forecast where operators see it: the synth summary, cost-forecast.json, cost-week.svg,
`offline.diff`'s weekly dollar difference; and the behaviour model and the stack builder it runs on."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from components.facts import instance_prices
from components.renderers.report.cost_demand import DAY_S, WARMUP_S, HubLimits, SessionDemand, learner_pods
from components.renderers.report.cost_forecast import forecast
from offline.cost import boot_seconds, cost_lines, forecast_document, pool_plan, stack_forecast
from offline.cost_diff import render_cost
from tests.conftest import PROJECT_DIR, STACKS, SynthRun
from tests.support.settings import settings_for

SVG = "{http://www.w3.org/2000/svg}"


# --- the behaviour model ------------------------------------------------------------------------------


def test_learners_arrive_in_the_first_minutes_and_leave_by_the_hubs_rules() -> None:
    hub = HubLimits(idle_s=1800, max_s=2 * 3600)
    session = SessionDemand(start_week_s=2 * DAY_S + 3600, duration_s=2 * 3600, learners=20, hub=hub)
    pods = learner_pods([session], None, seed=7)
    start = WARMUP_S + session.start_week_s
    assert len(pods) == 20 and all(p.in_session for p in pods)
    assert all(start <= p.arrival_s < start + 600 for p in pods)  # spread over the first 10 minutes
    assert all(p.end_s <= p.arrival_s + hub.max_s for p in pods)  # maxHours
    assert any(p.end_s < start + 2 * 3600 for p in pods)  # someone left early or went idle
    assert pods == learner_pods([session], None, seed=7)
    assert pods != learner_pods([session], None, seed=8)


def test_a_saturday_session_also_runs_in_the_warm_up_day() -> None:
    session = SessionDemand(start_week_s=6 * DAY_S + 3600, duration_s=3600, learners=2, hub=None)
    arrivals = sorted(p.arrival_s // DAY_S for p in learner_pods([session], None, seed=1))
    assert arrivals == [0, 0, 7, 7]  # the warm-up Saturday and the measured one


def test_walk_ins_come_on_weekdays_outside_sessions() -> None:
    pods = learner_pods([], HubLimits(1800, 8 * 3600), seed=3)
    assert len(pods) == 10 and not any(p.in_session for p in pods)
    assert {(p.arrival_s - WARMUP_S) // DAY_S for p in pods} == {1, 2, 3, 4, 5}


# --- the stack builder ----------------------------------------------------------------------------------


def test_the_boot_to_ready_figure_is_the_cited_time_to_gpu_without_the_cronjob() -> None:
    # staging pre-pulls with SOCI: batch 10 s + launch to Ready 100 s + device plugin 30 s + pull 67 s.
    assert boot_seconds(settings_for("staging")) == 10 + 100 + 30 + 67
    assert boot_seconds(settings_for("prod")) == 10 + 100 + 30 + 138


def test_staging_pool_plan_reads_the_stack() -> None:
    settings = settings_for("staging")
    plan = pool_plan(settings, settings.resolved.karpenter_pools[0])
    assert plan.slots_per_type == {"g4dn.xlarge": 3, "g4dn.2xlarge": 3}
    assert plan.prices == {"g4dn.xlarge": 0.631, "g4dn.2xlarge": 0.902}
    assert plan.demo_slots == 3 and plan.scoring == "MostAllocated"
    assert min(plan.buffer_week) == 3 and max(plan.buffer_week) == 9  # warm slots, + 6 learners at lead time
    assert [b.nodes for b in plan.budgets] == ["1", "0"]  # the pool's budget and the session window
    assert plan.expire_after_s == 7200 and plan.grace_s == 8100 and plan.consolidate_after_s == 300
    assert len(plan.sessions) == 2 and all(s.hub is not None for s in plan.sessions)


@pytest.mark.parametrize("stack", STACKS)
def test_forecasts_are_deterministic_and_complete(stack: str) -> None:
    settings = settings_for(stack)
    first, second = stack_forecast(settings), stack_forecast(settings)
    assert [r.dollars for r in first.results] == [r.dollars for r in second.results]
    timetabled = {pool.name for pool in settings.karpenter.node_pools if settings.resolved.pool(pool.name).sessions}
    for result in first.results:
        assert result.dollars > 0 and result.floor_dollars > 0
        assert result.ratio_to_floor is not None and result.ratio_to_floor >= 1.0  # nothing beats the floor
        # The timetable warms every session's slots; a pool no class uses (prod's l4-slice) has no in-class wait.
        assert result.wait_in_session == ((0, 0) if result.pool in timetabled else None)
    assert [line.name for line in first.fixed] == ["system nodes"]


def test_packing_costs_no_more_than_spreading_on_staging() -> None:
    settings = settings_for("staging")
    pool = settings.resolved.karpenter_pools[0]
    most = forecast(pool_plan(settings, pool))
    spread = settings.model_copy(
        update={"cluster": settings.cluster.model_copy(update={"most_allocated_scoring": False})}
    )
    least = forecast(pool_plan(spread, pool))
    assert least.run.node_seconds != {} and most.dollars <= least.dollars


# --- where operators see it -----------------------------------------------------------------------------


def test_the_summary_prints_the_forecast_per_pool_with_the_ratio(staging_synth: SynthRun) -> None:
    lines = staging_synth.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Weekly cost forecast"))
    header, pool, system, cpu_pool, total = lines[start + 1 : start + 6]
    assert "$/learner-h" in header and "x floor" in header
    document = json.loads((staging_synth.out / "cost-forecast.json").read_text())
    figures = document["pools"]["g4-nodepool"]
    assert pool.split()[:3] == ["g4-nodepool", f"{figures['nodeHours']:.1f}", f"{figures['dollars']:.2f}"]
    assert f"{figures['ratioToFloor']:.2f}" in pool.split()
    assert system.split()[:2] == ["system", "nodes"] and "m6i.large" in system and "estimated price" in system
    # The CPU user pool scales from zero with CPU notebooks, whose demand the model leaves out: priced per node-hour.
    assert cpu_pool.split()[:4] == ["pool", "cpu-user", "not", "forecast:"] and "per m6i.large node-hour" in cpu_pool
    assert total.split()[0] == "total"


def test_the_forecast_file_sits_beside_the_plan_not_in_manifests(staging_synth: SynthRun) -> None:
    document = json.loads((staging_synth.out / "cost-forecast.json").read_text())
    assert document["region"] == "us-west-1" and document["pricesDate"] == instance_prices.PRICES_DATE
    assert set(document["pools"]) == {"g4-nodepool"}
    assert not list((staging_synth.out / "manifests").glob("cost*"))


def test_the_picture_holds_every_series_and_the_session_bands(staging_synth: SynthRun) -> None:
    root = ET.parse(staging_synth.out / "cost-week.svg").getroot()
    ids = {element.get("id") for element in root.iter()}
    for series in ("in-use", "held", "nodes", "floor"):
        assert f"g4-nodepool-{series}" in ids
    bands = [e for e in root.iter(f"{SVG}rect") if e.get("class") == "session"]
    assert len(bands) == 2  # tue and thu
    labels = [e.text for e in root.iter(f"{SVG}text") if e.get("class") == "session-label"]
    assert labels == ["learning-lab tue 17:00", "learning-lab thu 17:00"]


def test_offline_diff_prints_the_weekly_dollar_difference_per_pool(staging_synth: SynthRun, tmp_path: Path) -> None:
    new = json.loads((staging_synth.out / "cost-forecast.json").read_text())
    old = json.loads(json.dumps(new))
    old["pools"]["g4-nodepool"]["dollars"] = new["pools"]["g4-nodepool"]["dollars"] - 10
    table = render_cost(old, new)
    (row,) = [line for line in table if line.startswith("| pool g4-nodepool |")]
    assert row.endswith("| +10.00 $ |")
    (missing,) = [line for line in render_cost(None, new) if line.startswith("| pool g4-nodepool |")]
    assert missing.split("|")[2].strip() == "n/a" and missing.split("|")[4].strip() == "n/a"
    result = subprocess.run(
        [sys.executable, "-m", "offline.diff", str(staging_synth.out), str(staging_synth.out)],
        cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0 and "| **total** |" in result.stdout and "**+0.00 $**" in result.stdout


def test_a_region_or_type_the_table_cannot_price_is_said_not_forecast() -> None:
    settings = settings_for("staging", pool={"instanceTypes": ["g5.xlarge"]})  # not offered in us-west-1
    result = stack_forecast(settings)
    assert result.pools == [] and result.skipped[0] == ("pool g4-nodepool", "none of g5.xlarge is offered in us-west-1")
    assert [name for name, _ in result.skipped[1:]] == ["pool cpu-user"]  # priced per node-hour, never forecast
    lines = cost_lines(result)
    assert any("g4-nodepool" in line and "not forecast: none of g5.xlarge is offered" in line for line in lines)
    assert forecast_document(settings, result)["notForecast"] == dict(result.skipped)
