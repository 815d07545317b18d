"""The weekly cost forecast of a stack: the one builder of the simulator's views from the settings, the fixed
lines (system nodes, a managed GPU group), and the forecast file the synth writes beside its plan.

`DIR/cost-forecast.json` (not under `manifests/`, which holds only Kubernetes objects) is what `offline.diff`
reads to print the weekly dollar difference; `DIR/cost-week.svg` is the picture (`cost_svg`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.facts import instance_prices, timetable
from components.renderers.karpenter.karpenter_packing import demo_pool, pool_slots_per_type
from components.renderers.labs.demo_manifests import demo_is_session_pod, demo_slots_beyond
from components.renderers.report import cost_svg
from components.renderers.report.cost_demand import HubLimits, SessionDemand
from components.renderers.report.cost_forecast import SEED, Budget, PoolForecast, PoolPlan, forecast
from components.renderers.report.cost_week import Scoring
from components.renderers.timetable.timetable_manifests import budget_windows
from components.settings import KarpenterPool, StackSettings

FORECAST_FILE = "cost-forecast.json"
SVG_FILE = "cost-week.svg"
HOURS_A_WEEK = 168


@dataclass(frozen=True)
class FixedLine:
    """Nodes that run all week whatever the demand: system nodes, a managed GPU group (a CPU user pool later)."""

    name: str
    instance_type: str
    nodes: int
    usd_per_hour: float
    estimate: bool

    @property
    def node_hours(self) -> float:
        return self.nodes * HOURS_A_WEEK

    @property
    def dollars(self) -> float:
        return self.node_hours * self.usd_per_hour


def boot_seconds(settings: StackSettings) -> int:
    """A new GPU node from pending pod to schedulable slot: the time-to-GPU steps without the CronJob's own start."""
    nodes = settings.gpu_nodes
    steps = timetable.lead_steps(
        pre_pulls=bool(settings.gpu_node_bootstrap.pre_pull_images), fast_image_pull=nodes.fast_image_pull
    )
    return sum(step.seconds for step in steps if not step.what.startswith("CronJob"))


def buffer_week_utc(base: int, sessions: tuple[timetable.Session, ...], lead: int) -> tuple[int, ...]:
    """CapacityBuffer replicas per UTC minute of the week (the zone's standard-time offset; docs/cost.md)."""
    profile = [base] * timetable.WEEK
    for session in sessions:
        offset = timetable.utc_offsets(session.timezone)[0]
        for start in session.starts:
            for minute in range(start - lead, start):
                profile[(minute - offset) % timetable.WEEK] += session.learners
    return tuple(profile)


def _session_demands(settings: StackSettings, pool: KarpenterPool) -> tuple[SessionDemand, ...]:
    hubs = {lab.name: lab.hub for lab in settings.labs}
    demands = []
    for session in pool.sessions:
        hub = hubs.get(session.lab)
        limits = HubLimits(hub.idle_minutes * 60, hub.max_seconds) if hub is not None else None
        offset = timetable.utc_offsets(session.timezone)[0]
        for start in session.starts:
            week_s = ((start - offset) % timetable.WEEK) * 60
            label = f"{session.lab} {timetable.DAY_NAMES[start // timetable.DAY]} {start % timetable.DAY // 60:02d}:{start % 60:02d}"
            demands.append(SessionDemand(week_s, session.duration_minutes * 60, session.learners, limits, label))
    return tuple(demands)


def _walk_in_hub(settings: StackSettings, pool: KarpenterPool) -> HubLimits | None:
    for lab in settings.labs:
        if lab.hub is not None and pool in settings.resolved.hub_pools(lab.hub):
            return HubLimits(lab.hub.idle_minutes * 60, lab.hub.max_seconds)
    return None


def _budgets(pool: KarpenterPool) -> tuple[Budget, ...]:
    budgets = []
    for budget in pool.settings.disruption_budgets:
        if budget.reasons is not None and "Empty" not in budget.reasons:
            continue  # does not limit removing empty nodes
        minutes = (timetable.parse_seconds(budget.duration) or 0) // 60 if budget.duration else None
        budgets.append(Budget(budget.nodes, budget.schedule, minutes))
    windows = budget_windows(pool.sessions, pool.lead_minutes)
    budgets += [Budget(w["nodes"], w["schedule"], (timetable.parse_seconds(w["duration"]) or 0) // 60) for w in windows]
    return tuple(budgets)


def pool_plan(settings: StackSettings, resolved: KarpenterPool) -> PoolPlan:
    """The simulator's view of one Karpenter pool, as the stack runs it."""
    pool = resolved.settings
    slots = pool_slots_per_type(resolved)
    prices = {
        t: instance_prices.hourly(settings.region, t)
        for t in slots
        if instance_prices.entry(settings.region, t).offered
    }
    if not prices:
        raise instance_prices.PriceError(f"none of {', '.join(sorted(slots))} is offered in {settings.region}")
    demo = settings.demo
    demo_slots = 0
    if demo.enabled and demo_pool(settings.karpenter) == pool.name:
        demo_slots = demo_slots_beyond(demo, settings.resolved.managed_group_slots)
    lead, sessions = resolved.lead_minutes, resolved.sessions
    return PoolPlan(
        name=pool.name,
        slots_per_type={t: n for t, n in slots.items() if t in prices},
        prices=prices,
        buffer_week=buffer_week_utc(pool.warm_gpu_slots, sessions, lead),
        budgets=_budgets(resolved),
        consolidate_after_s=timetable.parse_seconds(pool.consolidate_after) or 10**9,
        expire_after_s=timetable.parse_seconds(pool.expire_after),
        grace_s=timetable.parse_seconds(pool.termination_grace_period),
        boot_s=boot_seconds(settings),
        scoring=settings.cluster.scoring_strategy,
        sessions=_session_demands(settings, resolved),
        walk_in_hub=_walk_in_hub(settings, resolved),
        demo_slots=demo_slots,
        demo_do_not_disrupt=demo_is_session_pod(demo, settings.labs),
    )


def fixed_lines(settings: StackSettings) -> tuple[list[FixedLine], list[tuple[str, str]]]:
    """The lines that run all week (priced on their first instance type), and those the table cannot price."""
    wanted = [("system nodes", settings.system_nodes.instance_types[0], settings.system_nodes.desired_size)]
    group = settings.gpu_node_group
    if group.enabled:
        wanted.append(("managed GPU group", group.instance_types[0], group.desired_size))
    lines: list[FixedLine] = []
    skipped: list[tuple[str, str]] = []
    for name, kind, nodes in wanted:
        try:
            price = instance_prices.hourly(settings.region, kind)
        except instance_prices.PriceError as exc:
            skipped.append((name, str(exc)))
            continue
        lines.append(FixedLine(name, kind, nodes, price, instance_prices.entry(settings.region, kind).estimate))
    if settings.cpu_user_pool_enabled:
        # Learners' CPU notebooks: the pool scales from zero with them, and the CPU profile's demand is no part of
        # the learner-behaviour model, so its line states the price a node-hour costs instead of a week.
        pool = settings.karpenter.cpu_user_pool
        kind = pool.instance_types[0]
        try:
            cost = f"${instance_prices.hourly(settings.region, kind):.3f} per {kind} node-hour"
        except instance_prices.PriceError as exc:
            cost = str(exc)
        skipped.append((f"pool {pool.name}", f"scales from zero with CPU notebooks (demand not modelled); {cost}"))
    return lines, skipped


def _same_week(plan: PoolPlan) -> tuple[Any, ...]:
    """Everything of a plan but its name: two pools with equal keys run the same week."""
    fields = [getattr(plan, f.name) for f in dataclasses.fields(plan) if f.name != "name"]
    return tuple(tuple(sorted(v.items())) if isinstance(v, dict) else v for v in fields)


@dataclass(frozen=True)
class StackForecast:
    region: str  # whose on-demand prices
    scoring: Scoring  # how the stack's scheduler scores nodes
    pools: list[tuple[PoolPlan, PoolForecast]]
    fixed: list[FixedLine]
    skipped: list[tuple[str, str]]  # (line, why the price table cannot price it)

    @property
    def results(self) -> list[PoolForecast]:
        return [result for _, result in self.pools]


def stack_forecast(settings: StackSettings) -> StackForecast:
    plans, skipped = [], []
    for pool in settings.resolved.karpenter_pools:
        try:
            plans.append(pool_plan(settings, pool))
        except instance_prices.PriceError as exc:
            skipped.append((f"pool {pool.name}", str(exc)))
    # Pools that differ only by name run the same week: simulate each distinct pool once.
    runs: dict[tuple[Any, ...], PoolForecast] = {}
    results = []
    for plan in plans:
        key = _same_week(plan)
        if key not in runs:
            runs[key] = forecast(plan)
        results.append((plan, dataclasses.replace(runs[key], pool=plan.name)))
    fixed, unpriced = fixed_lines(settings)
    return StackForecast(settings.region, settings.cluster.scoring_strategy, results, fixed, skipped + unpriced)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def forecast_document(settings: StackSettings, stack: StackForecast) -> dict[str, Any]:
    """What `cost-forecast.json` holds: per pool and fixed line the week's figures (dollars rounded to cents)."""

    def waits(w: tuple[int, int] | None) -> dict[str, int] | None:
        return None if w is None else {"p50": w[0], "p95": w[1]}

    return {
        "region": settings.region,
        "pricesDate": instance_prices.PRICES_DATE,
        "seed": SEED,
        "scoring": settings.cluster.scoring_strategy,
        "pools": {
            p.pool: {
                "nodeHours": _rounded(p.node_hours),
                "dollars": _rounded(p.dollars),
                "learnerHours": _rounded(p.learner_hours),
                "usdPerLearnerHour": _rounded(p.usd_per_learner_hour),
                "floorDollars": _rounded(p.floor_dollars),
                "ratioToFloor": _rounded(p.ratio_to_floor),
                "waitSecondsInSessions": waits(p.wait_in_session),
                "waitSecondsOutsideSessions": waits(p.wait_outside),
            }
            for p in stack.results
        },
        "fixed": {
            line.name: {
                "instanceType": line.instance_type,
                "nodes": line.nodes,
                "nodeHours": line.node_hours,
                "dollars": _rounded(line.dollars),
                "estimate": line.estimate,
            }
            for line in stack.fixed
        },
        "notForecast": dict(stack.skipped),
    }


def write_forecast(out: Path, settings: StackSettings, stack_name: str, stack: StackForecast) -> None:
    """`cost-forecast.json` and `cost-week.svg` into `out`."""
    document = forecast_document(settings, stack)
    (out / FORECAST_FILE).write_text(json.dumps(document, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    title = f"gpu-platform {stack_name}: a simulated week of GPU slots ({settings.region}, seed {SEED}, UTC)"
    (out / SVG_FILE).write_text(cost_svg.render(title, stack.pools), encoding="utf-8")


def read_forecast(out: Path) -> dict[str, Any] | None:
    """The forecast a synth folder holds; None for a plan written before the forecast existed."""
    path = out / FORECAST_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _waits(waits: tuple[int, int] | None) -> str:
    return "-" if waits is None else f"{waits[0]}/{waits[1]} s"


def cost_lines(stack: StackForecast) -> list[str]:
    """The summary's weekly forecast: per GPU pool, then the fixed lines, then the total."""
    lines = [
        "",
        f"Weekly cost forecast (simulated week, on-demand prices {stack.region} of {instance_prices.PRICES_DATE}, "
        f"scheduler {stack.scoring}; model and sources: docs/cost.md; cost-week.svg):",
        f"  {'pool':<22}{'node-h':>8}{'$/week':>10}{'learner-h':>10}{'$/learner-h':>12}{'floor $':>9}{'x floor':>8}"
        f"  wait p50/p95 in class, outside",
    ]
    for result in stack.results:
        per_hour = "-" if result.usd_per_learner_hour is None else f"{result.usd_per_learner_hour:.2f}"
        ratio = "-" if result.ratio_to_floor is None else f"{result.ratio_to_floor:.2f}"
        lines.append(
            f"  {result.pool:<22}{result.node_hours:>8.1f}{result.dollars:>10.2f}{result.learner_hours:>10.1f}"
            f"{per_hour:>12}{result.floor_dollars:>9.2f}{ratio:>8}  {_waits(result.wait_in_session)}, "
            f"{_waits(result.wait_outside)}"
        )
    for line in stack.fixed:
        mark = " (estimated price)" if line.estimate else ""
        lines.append(
            f"  {line.name:<22}{line.node_hours:>8.1f}{line.dollars:>10.2f}  {line.nodes} x {line.instance_type} "
            f"around the clock{mark}"
        )
    lines += [f"  {name:<22}not forecast: {why}" for name, why in stack.skipped]
    total = sum(r.dollars for r in stack.results) + sum(line.dollars for line in stack.fixed)
    lines.append(f"  {'total':<22}{'':>8}{total:>10.2f}")
    return lines
