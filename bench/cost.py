"""The cost benchmark: four designs serving the same trace (staging's week), with the simulator of the forecast.

    .venv/bin/python bench/cost.py

1. this platform, as staging ships it (warm slots, the timetable, MostAllocated scoring, budget windows);
2. the seed's design: Karpenter on demand with time-slicing, default (LeastAllocated) scoring, no warm slots,
   no timetable, `expireAfter: 120m`, no terminationGracePeriod, and pods without do-not-disrupt (the seed's
   first commit, Pulumi.staging.yaml: g4dn.xlarge/2xlarge/12xlarge, consolidateAfter 5m, budget "1");
3. a fixed GPU node group sized for the class peak (demo + learners), around the clock (the classic setup);
4. zero-to-jupyterhub's usual GPU setup: user placeholders for the peak's learners all week (a buffer that
   never moves), no timetable, its user-scheduler packing (MostAllocated: z2jh 4.4.0 values.yaml
   `scheduling.userScheduler.pluginConfig`).
Plus, to show the trade behind the goals, the platform with `warmGpuSlots: 0` (the timetable alone).

Prints a Markdown table (node-hours, $/week, $/learner-hour, p95 wait in class and outside, ratio to the
floor) and the goals: platform <= 1.25x its floor with 0 s p95 in class, <= 0.5x the fixed group, <= 1.1x the seed.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT_DIR))

from components.facts import instance_prices  # noqa: E402
from components.renderers.report.cost_forecast import Budget, PoolForecast, PoolPlan, forecast  # noqa: E402
from components.settings import load_settings  # noqa: E402
from offline.config_files import read_stack_config  # noqa: E402
from offline.cost import pool_plan  # noqa: E402

WEEK_MIN = 7 * 24 * 60
SEED_TYPES = ("g4dn.xlarge", "g4dn.2xlarge", "g4dn.12xlarge")
SEED_SLOTS = {"g4dn.xlarge": 3, "g4dn.2xlarge": 3, "g4dn.12xlarge": 12}


def designs(stack: str = "staging") -> dict[str, PoolPlan]:
    settings = load_settings(read_stack_config(PROJECT_DIR, stack).values)
    platform = pool_plan(settings, settings.resolved.karpenter_pools[0])
    peak_learners = max(s.learners for s in platform.sessions)
    peak = platform.demo_slots + peak_learners
    per_node = min(platform.slots_per_type.values())
    no_buffer = (0,) * WEEK_MIN
    seed = dataclasses.replace(
        platform,
        slots_per_type=SEED_SLOTS,
        prices={t: instance_prices.hourly(settings.region, t) for t in SEED_TYPES},
        buffer_week=no_buffer,
        budgets=(Budget("1"),),
        expire_after_s=120 * 60,
        grace_s=None,
        scoring="LeastAllocated",
        demo_do_not_disrupt=False,
        learner_do_not_disrupt=False,
    )
    fixed = dataclasses.replace(platform, buffer_week=no_buffer, fixed_nodes=math.ceil(peak / per_node))
    z2jh = dataclasses.replace(
        platform, buffer_week=(peak_learners,) * WEEK_MIN, budgets=(Budget("1"),), scoring="MostAllocated"
    )
    timetable_only = dataclasses.replace(
        platform, buffer_week=tuple(b - min(platform.buffer_week) for b in platform.buffer_week)
    )
    return {
        "this platform (staging as shipped)": platform,
        "seed: on demand, no warm slots, expireAfter 120m": seed,
        f"fixed node group ({fixed.fixed_nodes} nodes, around the clock)": fixed,
        f"z2jh user placeholders ({peak_learners} slots, all week)": z2jh,
        "this platform with warmGpuSlots 0 (timetable only)": timetable_only,
    }


def _p95(waits: tuple[int, int] | None) -> str:
    return "-" if waits is None else f"{waits[1]} s"


def table(results: dict[str, PoolForecast]) -> list[str]:
    lines = [
        "| design | node-hours | $/week | $/learner-hour | p95 wait in class | p95 wait outside | x floor |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        lines.append(
            f"| {name} | {r.node_hours:.1f} | {r.dollars:.2f} | {r.usd_per_learner_hour or 0:.2f} | "
            f"{_p95(r.wait_in_session)} | {_p95(r.wait_outside)} | {r.ratio_to_floor or 0:.2f} |"
        )
    return lines


def main() -> int:
    results = {name: forecast(plan) for name, plan in designs().items()}
    print("\n".join(table(results)))
    platform, seed, fixed, _, _ = results.values()
    goals = [
        ("platform <= 1.25x its floor", (platform.ratio_to_floor or 0) <= 1.25),
        ("platform p95 wait in class 0 s", platform.wait_in_session in (None, (0, 0))),
        ("platform <= 0.5x the fixed node group", platform.dollars <= 0.5 * fixed.dollars),
        ("platform <= 1.1x the seed", platform.dollars <= 1.1 * seed.dollars),
    ]
    print()
    for goal, met in goals:
        print(f"- {goal}: {'met' if met else 'missed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
