"""The week simulator: one GPU pool's nodes, minute by minute, as Karpenter and kube-scheduler would run them.

Pure and deterministic (no clock, no randomness of its own: the demand comes from `cost_demand`). What it
replays, each with the project's own model or the upstream rule it follows (docs/cost.md "The simulator"):

- Provisioning: every minute, pending pods plus the CapacityBuffer's replicas not covered by free slots
  (ready or in flight) open NodeClaims with the project's packing model (`karpenter_packing.pack`); a new
  node takes `boot_s` from launch to schedulable (Karpenter's 10 s batch, launch to Ready, the device plugin,
  the pre-pull: `timetable.lead_steps`).
- Scheduling: a pod goes to a ready, uncordoned node with a free slot, the fullest (`MostAllocated`) or the
  emptiest (`LeastAllocated`) by GPU slots; ties go to the oldest node.
- Consolidation `WhenEmpty`: a node with no pods for `consolidateAfter` is removed while the pool's budgets
  allow (at most the smallest `nodes` of the active budgets disrupting at once, percentages rounded up as
  Karpenter does) and the buffer still fits on the other nodes (else Karpenter would launch it again).
- Expiry: at `expireAfter` a node is cordoned and drained whatever the budgets say; do-not-disrupt pods stay
  until they end or `terminationGracePeriod` (less the pod's 30 s grace) runs out, then go pending again.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from components.renderers.karpenter.karpenter_packing import pack
from components.renderers.report.cost_demand import MINUTE, SPAN_S, WARMUP_S, PodDemand

Scoring = Literal["MostAllocated", "LeastAllocated"]
SESSION_POD_GRACE_S = 30


@dataclass(frozen=True)
class PoolModel:
    """What the simulator needs of one pool: its types, price, buffer, disruption settings and scoring."""

    name: str
    slots_per_type: dict[str, int]
    prices: dict[str, float]  # USD per hour, offered types only
    buffer: tuple[int, ...]  # CapacityBuffer replicas per minute of the span
    budgets: tuple[int, ...]  # nodes Karpenter may disrupt at once per minute of the span (-1: a percentage, below)
    budget_percent: tuple[int, ...]  # the smallest active percentage per minute (101: none)
    consolidate_after_s: int
    expire_after_s: int | None
    grace_s: int | None
    boot_s: int
    scoring: Scoring
    demo_slots: int = 0
    demo_do_not_disrupt: bool = True
    learner_do_not_disrupt: bool = True  # hub notebooks carry karpenter.sh/do-not-disrupt
    fixed_nodes: int = 0  # a node group of this many nodes, around the clock (no Karpenter)


@dataclass
class _Node:
    id: int
    type: str
    slots: int
    launched_s: int
    ready_s: int
    pods: list[int] = field(default_factory=list)
    cordoned_s: int | None = None
    empty_since: int | None = None
    gone_s: int | None = None


@dataclass(frozen=True)
class Wait:
    seconds: int
    in_session: bool


@dataclass(frozen=True)
class WeekRun:
    """The measured week: node-seconds by type, the learners' waits, and per-minute series for the picture."""

    node_seconds: dict[str, int]
    learner_slot_seconds: int
    waits: tuple[Wait, ...]
    in_use: tuple[int, ...]  # learner + demo slots in use, per minute of the week
    demand: tuple[int, ...]  # learners present (placed or waiting) + demo, per minute
    held: tuple[int, ...]  # slots on nodes that exist, per minute
    nodes: tuple[int, ...]  # nodes that exist, per minute


class _Sim:
    """One pool's span, minute by minute. Pods: learner index (>= 0) or demo pod (< 0)."""

    def __init__(self, model: PoolModel, pods: Sequence[PodDemand]):
        self.m = model
        self.pods = pods
        self.nodes: list[_Node] = []
        self.live: list[_Node] = []  # nodes that exist (launched, not yet gone)
        self.node_of: dict[int, _Node] = {}
        self.pending: list[tuple[int, int]] = []  # (pod, pending since)
        self.waits: list[Wait] = []
        self.next_arrival = 0
        self.consolidated = False  # whether the last tick removed an empty node

    def alive(self) -> list[_Node]:
        return self.live

    def add(self, node: _Node) -> None:
        self.nodes.append(node)
        self.live.append(node)

    def retire(self, node: _Node, now: int) -> None:
        node.gone_s = now
        self.live.remove(node)

    def launch(self, count: int, at: int, ready: int) -> None:
        for planned in pack([1] * count, self.m.slots_per_type):
            slots = self.m.slots_per_type[planned.instance_type]
            self.add(_Node(len(self.nodes), planned.instance_type, slots, at, ready))

    def _dnd(self, pod: int) -> bool:
        return self.m.learner_do_not_disrupt if pod >= 0 else self.m.demo_do_not_disrupt

    def evict(self, node: _Node, pods: list[int], now: int) -> None:
        for pod in pods:
            node.pods.remove(pod)
            del self.node_of[pod]
            self.pending.append((pod, now))

    def depart(self, end: int, measured: bool) -> None:
        for pod, node in list(self.node_of.items()):
            if pod >= 0 and self.pods[pod].end_s < end:
                node.pods.remove(pod)
                del self.node_of[pod]
        for pod, since in self.pending:
            # A learner who gave up before a slot came waited the whole time (the wait is censored there).
            if pod >= 0 and self.pods[pod].end_s < end and measured:
                self.waits.append(Wait(self.pods[pod].end_s - since, self.pods[pod].in_session))
        self.pending = [(p, s) for p, s in self.pending if p < 0 or self.pods[p].end_s >= end]

    def expire(self, now: int) -> None:
        m = self.m
        if m.fixed_nodes:
            return  # a managed node group's nodes do not expire
        for node in list(self.live):
            if node.cordoned_s is None and m.expire_after_s is not None and now >= node.launched_s + m.expire_after_s:
                node.cordoned_s = now
                self.evict(node, [p for p in node.pods if not self._dnd(p)], now)
            if node.cordoned_s is not None:
                if m.grace_s is not None and now >= node.cordoned_s + m.grace_s - SESSION_POD_GRACE_S:
                    self.evict(node, list(node.pods), now)
                if not node.pods:
                    self.retire(node, now)

    def arrive(self, end: int) -> None:
        while self.next_arrival < len(self.pods) and self.pods[self.next_arrival].arrival_s < end:
            self.pending.append((self.next_arrival, self.pods[self.next_arrival].arrival_s))
            self.next_arrival += 1

    def schedule(self, now: int, end: int, measured: bool) -> None:
        waiting = []
        sign = -1 if self.m.scoring == "MostAllocated" else 1
        for pod, since in sorted(self.pending, key=lambda x: (x[1], x[0])):
            free = [n for n in self.alive() if n.ready_s < end and n.cordoned_s is None and len(n.pods) < n.slots]
            if not free:
                waiting.append((pod, since))
                continue
            node = min(free, key=lambda n: (sign * len(n.pods) / n.slots, n.id))
            node.pods.append(pod)
            node.empty_since = None
            self.node_of[pod] = node
            if pod >= 0 and measured:  # a first start, or a restart after an eviction
                self.waits.append(Wait(max(since, now, node.ready_s) - since, self.pods[pod].in_session))
        self.pending = waiting

    def free_slots(self) -> int:
        return sum(n.slots - len(n.pods) for n in self.alive() if n.cordoned_s is None)

    def provision(self, minute: int, now: int) -> None:
        deficit = len(self.pending) + self.m.buffer[minute] - self.free_slots()
        if deficit > 0 and not self.m.fixed_nodes:
            launch = max([now, *(since for _, since in self.pending)])
            self.launch(deficit, launch, launch + self.m.boot_s)

    def next_event_minute(self, minute: int, changes: list[int]) -> int:
        """The next minute at which something can happen (every minute while pods are pending)."""
        if self.pending:
            return minute + 1
        ticks = changes[bisect.bisect_right(changes, minute) :][:1]  # buffer or budget changes
        within = []  # seconds handled by the tick that contains them: arrivals, departures, readiness
        if self.next_arrival < len(self.pods):
            within.append(self.pods[self.next_arrival].arrival_s)
        within += [self.pods[pod].end_s for pod in self.node_of if pod >= 0]
        reached = []  # seconds a tick acts on once `now` has reached them: expiry, grace, consolidateAfter
        m = self.m
        for node in self.live:
            within.append(node.ready_s)  # schedulable in the tick it turns ready,
            reached.append(node.ready_s)  # and consolidatable from the next
            if node.cordoned_s is None and m.expire_after_s is not None:
                reached.append(node.launched_s + m.expire_after_s)
            if node.cordoned_s is not None and m.grace_s is not None:
                reached.append(node.cordoned_s + m.grace_s - SESSION_POD_GRACE_S)
            if not node.pods and node.cordoned_s is None:
                reached.append((node.empty_since or 0) + m.consolidate_after_s)
            if node.cordoned_s is not None and m.grace_s is None:
                ticks.append(minute + 1)
        if self.consolidated and any(t <= minute * MINUTE for t in reached):
            ticks.append(minute + 1)  # the budget let one go this minute: the next may go in the next
        ticks += [t // MINUTE for t in within] + [-(-t // MINUTE) for t in reached]
        return min((t for t in ticks if t > minute), default=SPAN_S // MINUTE)

    def consolidate(self, minute: int, now: int) -> None:
        self.consolidated = False
        if self.m.fixed_nodes:
            return
        alive = self.alive()
        allowed = self.m.budgets[minute]
        if self.m.budget_percent[minute] <= 100:
            allowed = min(allowed, math.ceil(self.m.budget_percent[minute] * len(alive) / 100))
        allowed -= sum(1 for n in alive if n.cordoned_s is not None)
        for node in list(alive):
            if node.pods or node.cordoned_s is not None or node.ready_s > now:
                continue
            if node.empty_since is None:
                node.empty_since = now
            if allowed <= 0 or now - node.empty_since < self.m.consolidate_after_s:
                continue
            if self.free_slots() - node.slots >= self.m.buffer[minute]:
                self.retire(node, now)
                self.consolidated = True
                allowed -= 1


def _change_minutes(model: PoolModel) -> list[int]:
    """Span minutes at which the buffer or a budget changes."""
    runs = itertools.groupby(zip(model.buffer, model.budgets, model.budget_percent, strict=True))
    return list(itertools.accumulate(sum(1 for _ in group) for _, group in runs))[:-1]


def simulate(model: PoolModel, pods: Sequence[PodDemand], *, every_minute: bool = False) -> WeekRun:
    """The span minute by minute; figures and series of the measured week only. Minutes in which nothing can
    change are skipped (`every_minute=True` steps through all of them: the same result, slower)."""
    sim = _Sim(model, pods)
    demo = list(range(-1, -model.demo_slots - 1, -1))
    start = model.fixed_nodes or model.demo_slots + model.buffer[0]
    if model.fixed_nodes:
        cheapest = min(model.slots_per_type, key=lambda t: (model.prices[t], t))
        for index in range(model.fixed_nodes):
            sim.add(_Node(index, cheapest, model.slots_per_type[cheapest], 0, 0))
    elif start:
        sim.launch(start, 0, 0)
    sim.pending = [(pod, 0) for pod in demo]
    node_seconds: dict[str, int] = {}
    slot_seconds = 0
    in_use: list[int] = []
    demand: list[int] = []
    held: list[int] = []
    nodes: list[int] = []
    changes = _change_minutes(model)
    total = SPAN_S // MINUTE
    minute = 0
    while minute < total:
        now, end = minute * MINUTE, (minute + 1) * MINUTE
        measured = now >= WARMUP_S
        sim.depart(end, measured)
        sim.expire(now)
        sim.arrive(end)
        sim.schedule(now, end, measured)
        sim.provision(minute, now)
        sim.consolidate(minute, now)
        # Nothing changes until the next event: those minutes repeat this one's figures.
        upto = minute + 1 if every_minute else min(total, sim.next_event_minute(minute, changes))
        repeat = max(0, upto - max(minute, WARMUP_S // MINUTE))
        minute = upto
        if not repeat:
            continue
        alive = sim.alive()
        for node in alive:
            node_seconds[node.type] = node_seconds.get(node.type, 0) + MINUTE * repeat
        slot_seconds += sum(1 for pod in sim.node_of if pod >= 0) * MINUTE * repeat
        in_use += [len(sim.node_of)] * repeat
        demand += [len(sim.node_of) + len(sim.pending)] * repeat
        held += [sum(n.slots for n in alive)] * repeat
        nodes += [len(alive)] * repeat
    return WeekRun(
        node_seconds=dict(sorted(node_seconds.items())),
        learner_slot_seconds=slot_seconds,
        waits=tuple(sim.waits),
        in_use=tuple(in_use),
        demand=tuple(demand),
        held=tuple(held),
        nodes=tuple(nodes),
    )
