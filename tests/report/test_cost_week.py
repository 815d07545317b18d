"""The week simulator against cases computed by hand: a class arriving together, staggered arrivals, a learner
leaving early under Least and Most allocated, a budget window that keeps nodes, expiry in and outside a session,
and the floor on small traces."""

from __future__ import annotations

from typing import Any

import pytest

from components.renderers.report.cost_demand import DAY_S, MINUTE, SPAN_S, WARMUP_S, PodDemand
from components.renderers.report.cost_forecast import NO_LIMIT, Budget, budget_active, floor_series, percentiles
from components.renderers.report.cost_week import PoolModel, WeekRun, simulate

SPAN_MIN = SPAN_S // MINUTE
T0 = WARMUP_S + DAY_S  # Monday 00:00 UTC of the measured week
T0_MIN = T0 // MINUTE
BOOT = 240
CLASS = 2 * 3600


def model(**overrides: Any) -> PoolModel:
    fields: dict[str, Any] = {
        "name": "pool",
        "slots_per_type": {"g4dn.xlarge": 3},
        "prices": {"g4dn.xlarge": 1.0},
        "buffer": (0,) * SPAN_MIN,
        "budgets": (NO_LIMIT,) * SPAN_MIN,
        "budget_percent": (101,) * SPAN_MIN,
        "consolidate_after_s": 300,
        "expire_after_s": None,
        "grace_s": None,
        "boot_s": BOOT,
        "scoring": "MostAllocated",
    }
    return PoolModel(**{**fields, **overrides})


def run(pool: PoolModel, pods: list[PodDemand], *, every_minute_too: bool = False) -> WeekRun:
    result = simulate(pool, pods)
    if every_minute_too:  # skipping quiet minutes never changes the answer
        assert result == simulate(pool, pods, every_minute=True)
    return result


def in_class(arrival: int, end: int = T0 + CLASS) -> PodDemand:
    return PodDemand(arrival, end, in_session=True)


def waits(result: WeekRun) -> list[int]:
    return sorted(w.seconds for w in result.waits)


def test_a_class_that_arrives_together_waits_one_boot_on_two_packed_nodes() -> None:
    result = run(model(), [in_class(T0) for _ in range(6)])
    assert waits(result) == [BOOT] * 6  # no warm slot: each waits for its node to boot
    # Two nodes launched at T0, empty at T0+2h, removed consolidateAfter (5m) later: 125 minutes each.
    assert result.node_seconds == {"g4dn.xlarge": 2 * 125 * MINUTE}
    # Slots are used from the boot (minute 4) to the end (minute 120): 116 minutes x 6 learners.
    assert result.learner_slot_seconds == 6 * 116 * MINUTE
    assert max(result.nodes) == 2 and max(result.held) == 6


def test_staggered_arrivals_share_the_node_the_first_one_opened() -> None:
    result = run(model(), [in_class(T0), in_class(T0 + 60)])
    # The second pod finds the first one's NodeClaim in flight with room: no second node; both wait for it.
    assert waits(result) == [BOOT - 60, BOOT]
    assert max(result.nodes) == 1
    assert percentiles(waits(result)) == (BOOT - 60, BOOT)


def test_staggered_arrivals_on_warm_slots_wait_nothing_and_the_buffer_is_restored() -> None:
    pods = [PodDemand(T0 + i * 60, T0 + 3600, in_session=True) for i in range(3)]
    result = run(model(buffer=(3,) * SPAN_MIN), pods)
    assert waits(result) == [0, 0, 0]
    # The warm node takes all three; Karpenter opens one node to keep 3 slots free: at most 2 nodes.
    assert max(result.nodes) == 2


@pytest.mark.parametrize(
    ("scoring", "node_b_seconds"),
    [
        # Most: pods 0-2 fill node A, pod 3 alone on B; pod 3 leaves at T0+1h, B goes 5 minutes later.
        ("MostAllocated", DAY_S + 3600 + 300),
        # Least: A {0, 2}, B {1, 3}; B keeps pod 1 to the end of class like A.
        ("LeastAllocated", DAY_S + CLASS + 300),
    ],
)
def test_a_learner_leaving_early_frees_a_node_only_when_packed(scoring: str, node_b_seconds: int) -> None:
    # Two warm nodes before class (buffer 6), none after T0; four learners, the last leaves after an hour.
    buffer = tuple(6 if m < T0_MIN else 0 for m in range(SPAN_MIN))
    pods = [in_class(T0) for _ in range(3)] + [in_class(T0, end=T0 + 3600)]
    result = run(model(buffer=buffer, scoring=scoring), pods, every_minute_too=True)
    assert waits(result) == [0, 0, 0, 0]
    node_a_seconds = DAY_S + CLASS + 300
    assert result.node_seconds == {"g4dn.xlarge": node_a_seconds + node_b_seconds}


def test_a_budget_window_keeps_nodes_until_it_closes() -> None:
    window = range(T0_MIN, T0_MIN + 180)  # nodes: "0" from T0 for 3h
    budgets = tuple(0 if m in window else NO_LIMIT for m in range(SPAN_MIN))
    result = run(model(budgets=budgets), [in_class(T0) for _ in range(6)], every_minute_too=True)
    # Empty at T0+2h, consolidatable at T0+2h5m, removed when the window closes at T0+3h.
    assert result.node_seconds == {"g4dn.xlarge": 2 * 180 * MINUTE}


def test_a_percentage_budget_rounds_up_and_lets_one_node_go_a_minute() -> None:
    percent = tuple(10 for _ in range(SPAN_MIN))  # 10% of 2 nodes: ceil(0.2) = 1 at a time
    result = run(model(budget_percent=percent), [in_class(T0) for _ in range(6)], every_minute_too=True)
    assert result.node_seconds == {"g4dn.xlarge": 125 * MINUTE + 126 * MINUTE}


def test_expiry_during_a_session_waits_for_the_learners_do_not_disrupt() -> None:
    pods = [in_class(T0) for _ in range(3)]
    result = run(model(expire_after_s=3600, grace_s=8100), pods)
    # Launched at T0, expired at T0+1h: cordoned, the learners stay to the end of class, then it goes at once.
    assert result.node_seconds == {"g4dn.xlarge": CLASS}
    assert result.learner_slot_seconds == 3 * (CLASS - BOOT)


def test_expiry_cut_short_by_the_grace_period_sends_learners_back_to_pending() -> None:
    pods = [in_class(T0) for _ in range(3)]
    # Expiry at T0+30m, grace 1h: the learners are forced off at T0+1h29m30s and wait for a new node.
    result = run(model(expire_after_s=1800, grace_s=3600), pods, every_minute_too=True)
    # Old node: T0 to the minute the grace runs out (1h30m); the replacement: launched then, ready BOOT later,
    # expired itself 30 minutes after launch, at the end of class, empty: gone at once. The learners lose
    # minutes 90-94 of class.
    assert result.node_seconds == {"g4dn.xlarge": 90 * MINUTE + 30 * MINUTE}
    assert result.learner_slot_seconds == 3 * (86 + 26) * MINUTE
    assert waits(result) == [BOOT] * 6  # each learner waits twice: at the start and after the eviction


def test_expiry_outside_a_session_leaves_a_walk_in_waiting_for_the_replacement() -> None:
    expire = WARMUP_S + 3600  # the warm node (launched at 0) expires at Sunday 01:00 of the measured week
    walk_in = PodDemand(expire + 60, expire + 3600, in_session=False)
    result = run(model(buffer=(3,) * SPAN_MIN, expire_after_s=expire, grace_s=8100), [walk_in])
    # The empty warm node goes at once; its replacement launches then and is ready BOOT later.
    assert [(w.seconds, w.in_session) for w in result.waits] == [(BOOT - 60, False)]


def test_the_floor_by_hand() -> None:
    types, prices = {"small": 3, "big": 12}, {"small": 1.0, "big": 3.5}
    # 0 slots: nothing; 3: one small ($1); 4: two small ($2 < $3.5); 7: three small ($3 < $3.5); 10: one big.
    dollars, nodes = floor_series([0, 3, 4, 7, 10], types, prices)
    assert nodes == [0, 1, 2, 3, 1]
    assert dollars == pytest.approx((0 + 1 + 2 + 3 + 3.5) / 60)


def test_the_floor_of_a_class_that_arrives_together() -> None:
    result = run(model(), [in_class(T0) for _ in range(6)])
    dollars, _ = floor_series(result.demand, {"g4dn.xlarge": 3}, {"g4dn.xlarge": 1.0})
    # 6 learners present (waiting or placed) for 120 minutes: 2 nodes x $1/h x 2h.
    assert dollars == pytest.approx(4.0)


@pytest.mark.parametrize(
    ("schedule", "active_minutes"),
    [
        ("0 15 * * mon-fri", 5 * 60),  # prod's freeze: five 1-hour windows here
        ("@daily", 7 * 60),
        ("@hourly", 7 * 24 * 60),  # every hour for an hour: always
        ("@monthly", 0),  # the simulated week holds no 1st of a month
    ],
)
def test_budget_schedules_in_the_week(schedule: str, active_minutes: int) -> None:
    assert sum(budget_active(Budget("0", schedule, 60))) == active_minutes
