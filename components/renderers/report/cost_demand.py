"""The learner-behaviour model of the week simulator: who asks for a GPU slot when, and for how long.

Pure and deterministic for a seed (only `random.Random(seed).random()` is drawn, whose sequence Python keeps
stable). Times are seconds of the simulated span (`SPAN_S`): a warm-up day (Saturday, UTC) and then the
measured week, Sunday 00:00 UTC to Sunday 00:00 UTC. docs/cost.md states the model and its figures:

- A session's learners arrive spread evenly at random over its first `arrival_spread_s` seconds.
- `leave_early` of them stop their server at a random time from 30 minutes in to the end of class.
- `go_idle` of them walk away at a random time from 15 minutes in; the hub culls the server `idleMinutes` later.
- The rest work to the end; `stop_at_end` of those stop their server, the others leave it to the idle culler.
- Without a hub (no culler) every pod ends at the latest at the end of class; a hub's `maxHours` caps each server.
- Walk-ins: on weekdays, `walk_ins_per_weekday` learners per hub arrive at random between 09:00 and 21:00 UTC
  outside its sessions, work `walk_in_stay_s`, then leave the server to the culler.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

MINUTE = 60
DAY_S = 24 * 3600
WEEK_S = 7 * DAY_S
WARMUP_S = DAY_S  # Saturday before the measured week: the week starts with nodes already running
SPAN_S = WARMUP_S + WEEK_S
_SATURDAY_S = 6 * DAY_S  # Saturday 00:00 UTC as a second of the week (0 = Sunday 00:00)


@dataclass(frozen=True)
class LearnerBehaviour:
    arrival_spread_s: int = 10 * MINUTE
    leave_early: float = 0.15
    go_idle: float = 0.20
    stop_at_end: float = 0.5
    walk_ins_per_weekday: int = 2
    walk_in_stay_s: int = 60 * MINUTE
    walk_in_hours: tuple[int, int] = (9, 21)  # UTC


BEHAVIOUR = LearnerBehaviour()


@dataclass(frozen=True)
class HubLimits:
    """What a lab's hub does to idle servers: culls after `idle_s`, stops any server after `max_s`."""

    idle_s: int
    max_s: int


@dataclass(frozen=True)
class SessionDemand:
    """One weekly session on the pool: its UTC start as a second of the week, length and learners."""

    start_week_s: int
    duration_s: int
    learners: int
    hub: HubLimits | None
    label: str = ""  # e.g. "learning-lab tue 17:00 America/Los_Angeles", for the picture


@dataclass(frozen=True)
class PodDemand:
    """One learner's notebook pod (one slot): asked for at `arrival_s`, gone at `end_s` (span seconds)."""

    arrival_s: int
    end_s: int
    in_session: bool


def span_times(week_s: int) -> list[int]:
    """Where a second of the week falls in the span: in the measured week, and in the warm-up if it is Saturday."""
    times = [WARMUP_S + week_s]
    if week_s >= _SATURDAY_S:
        times.append(week_s - _SATURDAY_S)
    return times


def session_windows(sessions: Sequence[SessionDemand]) -> list[tuple[int, int]]:
    """`[start, end)` span seconds of every session occurrence."""
    return sorted((t, t + s.duration_s) for s in sessions for t in span_times(s.start_week_s))


def _session_pods(session: SessionDemand, start: int, rng: random.Random, model: LearnerBehaviour) -> list[PodDemand]:
    end = start + session.duration_s
    pods = []
    for _ in range(session.learners):
        arrival = start + int(rng.random() * model.arrival_spread_s)
        draw = rng.random()
        when = rng.random()
        culled = session.hub.idle_s if session.hub else 0
        if draw < model.leave_early:
            leave = min(end, start + 30 * MINUTE + int(when * max(0, session.duration_s - 30 * MINUTE)))
            stop = max(leave, arrival + MINUTE)
        elif draw < model.leave_early + model.go_idle:
            idle = min(end, start + 15 * MINUTE + int(when * max(0, session.duration_s - 15 * MINUTE)))
            stop = max(idle, arrival + MINUTE) + culled
        else:
            stop = end if (session.hub is None or when < model.stop_at_end) else end + culled
        stop = min(stop, arrival + session.hub.max_s) if session.hub is not None else min(stop, end)
        pods.append(PodDemand(arrival, stop, in_session=True))
    return pods


def _walk_ins(
    hub: HubLimits, windows: Sequence[tuple[int, int]], rng: random.Random, model: LearnerBehaviour
) -> list[PodDemand]:
    first, last = model.walk_in_hours
    pods = []
    for day in range(1, 6):  # Monday..Friday of the measured week
        for _ in range(model.walk_ins_per_weekday):
            arrival = WARMUP_S + day * DAY_S + first * 3600 + int(rng.random() * (last - first) * 3600)
            if any(a <= arrival < b for a, b in windows):
                continue  # a walk-in during class is a learner of the class
            stop = min(arrival + model.walk_in_stay_s + hub.idle_s, arrival + hub.max_s)
            pods.append(PodDemand(arrival, stop, in_session=False))
    return pods


def learner_pods(
    sessions: Sequence[SessionDemand], walk_in_hub: HubLimits | None, seed: int, model: LearnerBehaviour = BEHAVIOUR
) -> list[PodDemand]:
    """Every learner pod of the span, sorted by arrival; the same list for the same inputs and seed."""
    rng = random.Random(seed)
    pods: list[PodDemand] = []
    for session in sessions:
        for start in span_times(session.start_week_s):
            pods += _session_pods(session, start, rng, model)
    if walk_in_hub is not None:
        pods += _walk_ins(walk_in_hub, session_windows(sessions), rng, model)
    return sorted(pods, key=lambda p: (p.arrival_s, p.end_s))
