"""The lab timetable in figures for the synth summary: per session the peak slots, nodes and vCPUs; per pool the GPU
node-hours a week the timetable keeps warm against the same headroom around the clock; and per pool how long a node can
live and why. Pure: no Pulumi import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.facts import timetable
from components.settings import KarpenterPool, ResolvedPool


def smallest_type(capacity: ResolvedPool) -> str:
    """The pool's instance type with the fewest slots per node (then the fewest vCPUs): the cheapest warm node."""
    nodes = capacity.nodes
    return min(nodes, key=lambda node: (node.slots, node.vcpus, node.instance_type)).instance_type


@dataclass(frozen=True)
class SessionPeak:
    lab: str
    key: str
    pool: str
    when: str  # schedule and zone
    learners: int
    lead_minutes: int
    peak_slots: int  # warm slots + learners of every session whose window overlaps, at the peak
    instance_type: str  # the pool's smallest type
    nodes: int  # on that type
    vcpus: int  # on that type
    max_vcpus: int  # on the pool's type needing the most vCPUs for the peak (what the quota must allow)


def session_peaks(pools: Sequence[KarpenterPool]) -> list[SessionPeak]:
    """Per session of every Karpenter pool (`pools`: none while Karpenter is off), its peak and what it needs."""
    rows = []
    for served in pools:
        pool, sessions = served.settings, served.sessions
        if not sessions:
            continue
        lead = served.lead_minutes
        held = timetable.held_profile(pool.warm_gpu_slots, sessions, lead)
        small = smallest_type(served)
        pool_nodes = served.nodes
        for session in sessions:
            peak = timetable.peak_in_windows(held, session, lead)
            nodes_on = {node.instance_type: (node.nodes_for(peak), node.vcpus) for node in pool_nodes}
            rows.append(
                SessionPeak(
                    lab=session.lab,
                    key=session.key,
                    pool=pool.name,
                    when=f"{session.schedule} {session.timezone}, {timetable.format_minutes(session.duration_minutes)}",
                    learners=session.learners,
                    lead_minutes=lead,
                    peak_slots=peak,
                    instance_type=small,
                    nodes=nodes_on[small][0],
                    vcpus=nodes_on[small][0] * nodes_on[small][1],
                    max_vcpus=max(nodes * vcpus for nodes, vcpus in nodes_on.values()),
                )
            )
    return rows


@dataclass(frozen=True)
class PoolWeek:
    pool: str
    instance_type: str
    timetable_node_hours: float  # GPU node-hours a week holding warm slots + session windows
    around_the_clock_node_hours: float  # the same peak headroom kept all week

    @property
    def saved_node_hours(self) -> float:
        return self.around_the_clock_node_hours - self.timetable_node_hours


def pool_weeks(pools: Sequence[KarpenterPool]) -> list[PoolWeek]:
    rows = []
    for served in pools:
        pool, sessions = served.settings, served.sessions
        if not sessions:
            continue
        held = timetable.held_profile(pool.warm_gpu_slots, sessions, served.lead_minutes)
        small = smallest_type(served)
        per_node = served.node(small).slots
        rows.append(
            PoolWeek(
                pool=pool.name,
                instance_type=small,
                timetable_node_hours=timetable.node_hours(held, per_node),
                around_the_clock_node_hours=timetable.node_hours([max(held)] * timetable.WEEK, per_node),
            )
        )
    return rows


@dataclass(frozen=True)
class NodeLifetime:
    pool: str
    longest: str  # e.g. "4h15m" or "unbounded"
    why: str


def node_lifetimes(pools: Sequence[KarpenterPool]) -> list[NodeLifetime]:
    """Per pool: expiry starts a forceful drain at expireAfter; terminationGracePeriod later every pod is gone."""
    rows = []
    for served in pools:
        pool = served.settings
        expire = timetable.parse_seconds(pool.expire_after)
        grace = timetable.parse_seconds(pool.termination_grace_period) or 0
        hold = served.node_hold_seconds
        sessions = (
            f"; lab pods need {timetable.format_seconds(hold + timetable.SESSION_POD_GRACE_SECONDS)} "
            "(lead + longest session, or a hub's maxHours, + pod grace), so expiry never ends one"
            if hold
            else ""
        )
        if expire is None:
            rows.append(
                NodeLifetime(
                    pool.name,
                    "unbounded",
                    f"expireAfter Never; a drift drain forces out do-not-disrupt pods after terminationGracePeriod "
                    f"{pool.termination_grace_period}{sessions}",
                )
            )
            continue
        rows.append(
            NodeLifetime(
                pool.name,
                timetable.format_seconds(expire + grace),
                f"expireAfter {pool.expire_after} starts a forceful drain (budgets do not stop it); do-not-disrupt "
                f"pods hold it at most terminationGracePeriod {pool.termination_grace_period}{sessions}",
            )
        )
    return rows
