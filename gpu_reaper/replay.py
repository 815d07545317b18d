"""The dry run: recorded scrapes (`<unix-seconds>.prom` files) and a recorded `GET /users` answer in, one JSON
line per pod and window out. The service takes the same path for each live window (`judge_window`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpu_reaper import classify
from gpu_reaper.promtext import parse
from gpu_reaper.users import Learner, is_exempt


@dataclass(frozen=True)
class Decision:
    namespace: str
    pod: str
    user: str | None
    state: str
    action: str
    at: float

    def line(self) -> str:
        return json.dumps(
            {
                "namespace": self.namespace,
                "pod": self.pod,
                "user": self.user,
                "state": self.state,
                "action": self.action,
                "at": int(self.at),
            },
            sort_keys=False,
        )


@dataclass
class Judge:
    """Judges window after window, remembering each pod's idle windows and warning time."""

    limits: classify.Thresholds
    exempt_group: str
    namespace: str | None = None
    # Profiles whose slots give no per-process GPU samples (MPS, g6f): their pods are unknown, never reclaimed.
    unjudged_profiles: frozenset[str] = frozenset()
    memory: dict[tuple[str, str], classify.Memory] = field(default_factory=dict)

    def judge_window(
        self,
        scrapes: Iterable[classify.Scrape],
        now: float,
        learners: Mapping[str, Learner],
        kernels_busy: Mapping[str, bool],
    ) -> list[Decision]:
        readings = classify.window_readings(scrapes, self.limits.threshold_percent)
        decisions = []
        for key, reading in sorted(readings.items()):
            if self.namespace is not None and reading.namespace != self.namespace:
                continue
            learner = learners.get(reading.pod)
            user = learner.name if learner else None
            state = classify.pod_state(reading, self.limits.threshold_percent, kernels_busy.get(user or "", False))
            if learner is not None and learner.profile in self.unjudged_profiles and state != classify.BUSY:
                state = classify.UNKNOWN
            verdict = classify.decide(
                state,
                self.memory.get(key, classify.Memory()),
                now,
                learner.started_at if learner else None,
                is_exempt(learner, self.exempt_group),
                self.limits,
            )
            self.memory[key] = classify.Memory() if verdict.action == classify.STOP else verdict.memory
            decisions.append(Decision(reading.namespace, reading.pod, user, state, verdict.action, now))
        return decisions


def read_scrapes(directory: Path) -> list[classify.Scrape]:
    """Every `<unix-seconds>.prom` file of `directory`, oldest first."""
    files = sorted(directory.glob("*.prom"), key=lambda path: float(path.stem))
    return [classify.Scrape(float(path.stem), tuple(parse(path.read_text(), classify.FIELDS))) for path in files]


def windows(scrapes: list[classify.Scrape], seconds: float) -> Iterator[tuple[float, list[classify.Scrape]]]:
    """Consecutive windows of `seconds` from the first scrape: (the window's end, its scrapes); empty ones skipped."""
    if not scrapes:
        return
    start = scrapes[0].at
    index = 0
    while start + index * seconds <= scrapes[-1].at:
        low, high = start + index * seconds, start + (index + 1) * seconds
        inside = [scrape for scrape in scrapes if low <= scrape.at < high]
        if inside:
            yield high, inside
        index += 1


def dry_run(
    judge: Judge,
    scrapes: list[classify.Scrape],
    learners: Mapping[str, Learner],
    kernels: Mapping[str, list[dict[str, Any]]],
) -> list[Decision]:
    """The decisions the reaper would take over the recorded scrapes (nothing is warned or stopped)."""
    busy = {user: classify.kernels_busy(models) for user, models in kernels.items()}
    decisions: list[Decision] = []
    for end, inside in windows(scrapes, judge.limits.window_seconds):
        decisions.extend(judge.judge_window(inside, end, learners, busy))
    return decisions
