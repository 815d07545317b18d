"""The weekly cost forecast of one GPU pool: the simulator's inputs from a narrow view, its figures, the floor.

Pure: a `PoolPlan` (built by `offline/cost.py` from the settings, the one builder) and a seed in, a
`PoolForecast` out. The floor is the cost of serving the same demand (learners present, waiting or not, and
the demo) with perfect packing and no empty node: the sum over the week's minutes of
ceil(slots in use / slots per node) x the price of the type that does it cheapest.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from components.facts import cron
from components.renderers.report.cost_demand import (
    DAY_S,
    MINUTE,
    SPAN_S,
    WARMUP_S,
    HubLimits,
    SessionDemand,
    learner_pods,
)
from components.renderers.report.cost_week import PoolModel, Scoring, WeekRun, simulate

WEEK_MIN = 7 * DAY_S // MINUTE
SEED = 20261203  # the forecast's one seed: two synths print the same figures
NO_LIMIT = 1_000_000


@dataclass(frozen=True)
class Budget:
    """One NodePool disruption budget: `nodes` ("1" or "10%"), active always or from each UTC `schedule` fire."""

    nodes: str
    schedule: str | None = None
    duration_minutes: int | None = None


@dataclass(frozen=True)
class PoolPlan:
    name: str
    slots_per_type: dict[str, int]
    prices: dict[str, float]  # offered types only
    buffer_week: tuple[int, ...]  # CapacityBuffer replicas per UTC minute of the week (0 = Sunday 00:00)
    budgets: tuple[Budget, ...]
    consolidate_after_s: int
    expire_after_s: int | None
    grace_s: int | None
    boot_s: int
    scoring: Scoring
    sessions: tuple[SessionDemand, ...]
    walk_in_hub: HubLimits | None
    demo_slots: int = 0
    demo_do_not_disrupt: bool = True
    learner_do_not_disrupt: bool = True
    fixed_nodes: int = 0


@dataclass(frozen=True)
class PoolForecast:
    pool: str
    node_hours: float
    dollars: float
    learner_hours: float
    floor_dollars: float
    wait_in_session: tuple[int, int] | None  # p50, p95 seconds; None: nobody asked
    wait_outside: tuple[int, int] | None
    run: WeekRun
    floor_nodes: tuple[int, ...]  # per minute, for the picture

    @property
    def usd_per_learner_hour(self) -> float | None:
        return self.dollars / self.learner_hours if self.learner_hours else None

    @property
    def ratio_to_floor(self) -> float | None:
        return self.dollars / self.floor_dollars if self.floor_dollars else None


# robfig/cron's descriptors as five fields; @monthly and @yearly fire on the 1st, which the simulated week (no
# calendar) does not hold: they never fire in it.
WEEKLY_MACROS = {"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}


def budget_active(budget: Budget) -> list[bool]:
    """Per UTC minute of the week: is this budget in force (a fire of its schedule within `duration`)?

    The week has no calendar: day-of-month and month fields are read as `*`, and @monthly/@yearly never fire."""
    if budget.schedule is None or budget.duration_minutes is None:
        return [True] * WEEK_MIN
    if budget.schedule.startswith("@"):
        if budget.schedule not in WEEKLY_MACROS:
            return [False] * WEEK_MIN
        schedule = WEEKLY_MACROS[budget.schedule]
    else:
        schedule = budget.schedule
    minutes, hours, _, _, weekdays = cron.expand(schedule)
    active = [False] * WEEK_MIN
    for day in weekdays:
        for hour in hours:
            for minute in minutes:
                start = day * 1440 + hour * 60 + minute
                for offset in range(budget.duration_minutes):
                    active[(start + offset) % WEEK_MIN] = True
    return active


def _span(week: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """A per-minute week series laid over the span: the warm-up Saturday, then the week from Sunday."""
    warmup = WARMUP_S // MINUTE
    return tuple(week[WEEK_MIN - warmup :]) + tuple(week)


def pool_model(plan: PoolPlan) -> PoolModel:
    counts, percents = [NO_LIMIT] * WEEK_MIN, [101] * WEEK_MIN
    for budget in plan.budgets:
        value = int(budget.nodes.rstrip("%"))
        active = budget_active(budget)
        if budget.nodes.endswith("%"):
            percents = [min(p, value) if on else p for p, on in zip(percents, active, strict=True)]
        else:
            counts = [min(c, value) if on else c for c, on in zip(counts, active, strict=True)]
    assert SPAN_S // MINUTE == WEEK_MIN + WARMUP_S // MINUTE
    return PoolModel(
        name=plan.name,
        slots_per_type=plan.slots_per_type,
        prices=plan.prices,
        buffer=_span(plan.buffer_week),
        budgets=_span(counts),
        budget_percent=_span(percents),
        consolidate_after_s=plan.consolidate_after_s,
        expire_after_s=plan.expire_after_s,
        grace_s=plan.grace_s,
        boot_s=plan.boot_s,
        scoring=plan.scoring,
        demo_slots=plan.demo_slots,
        demo_do_not_disrupt=plan.demo_do_not_disrupt,
        learner_do_not_disrupt=plan.learner_do_not_disrupt,
        fixed_nodes=plan.fixed_nodes,
    )


def percentiles(values: Sequence[int]) -> tuple[int, int] | None:
    """p50 and p95 by nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)

    def rank(p: float) -> int:
        return ordered[max(0, math.ceil(p * len(ordered)) - 1)]

    return rank(0.50), rank(0.95)


def floor_series(
    demand: Sequence[int], slots_per_type: dict[str, int], prices: dict[str, float]
) -> tuple[float, list[int]]:
    """Floor dollars over `demand` (slots per minute) and the nodes it needs per minute."""

    @cache
    def cheapest(slots: int) -> tuple[float, int]:
        if slots == 0:
            return 0.0, 0
        return min(
            (math.ceil(slots / s) * prices[t], math.ceil(slots / s)) for t, s in slots_per_type.items() if t in prices
        )

    dollars = 0.0
    nodes: list[int] = []
    for slots, run in itertools.groupby(demand):
        minutes = sum(1 for _ in run)
        price, count = cheapest(slots)
        dollars += price / 60 * minutes
        nodes += [count] * minutes
    return dollars, nodes


def forecast(plan: PoolPlan, seed: int = SEED) -> PoolForecast:
    pods = learner_pods(plan.sessions, plan.walk_in_hub, seed)
    run = simulate(pool_model(plan), pods)
    dollars = sum(seconds / 3600 * plan.prices[t] for t, seconds in run.node_seconds.items())
    floor, floor_nodes = floor_series(run.demand, plan.slots_per_type, plan.prices)
    return PoolForecast(
        pool=plan.name,
        node_hours=sum(run.node_seconds.values()) / 3600,
        dollars=dollars,
        learner_hours=run.learner_slot_seconds / 3600,
        floor_dollars=floor,
        wait_in_session=percentiles([w.seconds for w in run.waits if w.in_session]),
        wait_outside=percentiles([w.seconds for w in run.waits if not w.in_session]),
        run=run,
        floor_nodes=tuple(floor_nodes),
    )
