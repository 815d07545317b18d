"""The lab timetable as numbers: session starts, lead time, the weekly step function of warm slots, the UTC
disruption-budget windows and how long a pool's nodes must hold a session. Pure: no Pulumi import.

Times are minutes of a week, 0 = Sunday 00:00, in the sessions' own time zone for everything the CronJobs do
(`spec.timeZone` leaves daylight saving time to the CronJob controller) and in UTC for the NodePool budgets
(Karpenter reads budget schedules in UTC: kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go `Budget.IsActive`).
docs/timetable.md explains each rule.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from components.facts import cron

DAY = 24 * 60
WEEK = 7 * DAY
DAY_NAMES = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")

# Kubernetes' default pod `terminationGracePeriodSeconds`: Karpenter deletes a do-not-disrupt pod this long
# before the node's terminationGracePeriod runs out, so that the pod gets its own grace period
# (aws/karpenter-provider-aws v1.14.1 website/content/en/preview/concepts/disruption.md, "TerminationGracePeriod").
SESSION_POD_GRACE_SECONDS = 30
# Longest session: a session window must never reach into the same session's next day.
MAX_SESSION_SECONDS = 12 * 3600
# Years whose UTC offsets a budget window covers (a zone's rules can change; tzdata is the source).
OFFSET_YEARS = (2026, 2027, 2028)

_DURATION_PART = re.compile(r"([0-9]+)(h|m|s)")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1}


def parse_seconds(text: str) -> int | None:
    """`2h`, `90m`, `1h30m`, `120m`, `30s` -> seconds; `Never` -> None."""
    if text == "Never":
        return None
    parts = _DURATION_PART.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"'{text}' is not a duration like 2h, 90m or 1h30m")
    return sum(int(number) * _UNIT_SECONDS[unit] for number, unit in parts)


def format_minutes(minutes: int) -> str:
    """Minutes as a Karpenter budget duration: `3h5m`, `45m`, `2h`."""
    hours, rest = divmod(minutes, 60)
    return (f"{hours}h" if hours else "") + (f"{rest}m" if rest or not hours else "")


def format_seconds(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    mins, secs = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((hours, "h"), (mins, "m"), (secs, "s")) if v) or "0s"


# --- time zones ---------------------------------------------------------------------------------------


def check_timezone(name: str) -> str:
    """An IANA zone the CronJob controller and Python both know; not `Local` (the API server refuses it)."""
    if name.lower() in ("local", "localtime") or name.startswith(("/", ".")) or ".." in name:
        raise ValueError(f"'{name}' is not an IANA time zone name like America/Los_Angeles")
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"'{name}' is not an IANA time zone name like America/Los_Angeles or Europe/Berlin") from None
    return name


@cache
def utc_offsets(zone: str) -> tuple[int, ...]:
    """Every UTC offset (minutes east of UTC) the zone uses in OFFSET_YEARS, ascending: two when it has DST."""
    tz = ZoneInfo(zone)
    offsets = set()
    for year in OFFSET_YEARS:
        start = datetime(year, 1, 1, 12, tzinfo=tz)
        for day in range(0, 366, 1):
            moment = start + timedelta(days=day)
            offset = moment.utcoffset()
            assert offset is not None
            offsets.add(int(offset.total_seconds() // 60))
    return tuple(sorted(offsets))


# --- session schedules -----------------------------------------------------------------------------------

SESSION_SCHEDULE_HELP = (
    "a weekly start in the session's time zone: 'minute hour * * days' with one minute and one hour "
    "(e.g. '0 17 * * tue,thu'; another start time is another session)"
)


def session_starts(schedule: str) -> tuple[int, ...]:
    """Local minutes of the week at which a session starts; ValueError for anything but a weekly start time."""
    try:
        minutes, hours, _, _, weekdays = cron.expand(schedule)
    except cron.CronError as exc:
        raise ValueError(f"{exc}; must be {SESSION_SCHEDULE_HELP}") from None
    fields = schedule.split()
    if len(minutes) != 1 or len(hours) != 1 or fields[2] != "*" or fields[3] != "*":
        raise ValueError(f"'{schedule}' must be {SESSION_SCHEDULE_HELP}")
    (minute,), (hour,) = minutes, hours
    return tuple(sorted(day * DAY + hour * 60 + minute for day in weekdays))


@dataclass(frozen=True)
class Session:
    """One `labs[i].sessions[j]` entry, resolved to its pool."""

    lab: str
    key: str  # `labs.<i>.sessions.<j>`: the config path errors name
    pool: str
    schedule: str
    timezone: str
    duration_minutes: int
    learners: int

    @property
    def starts(self) -> tuple[int, ...]:
        return session_starts(self.schedule)


def windows(session: Session, lead_minutes: int) -> list[tuple[int, int]]:
    """Local `[start, end)` minutes of the week the session holds its pool: from lead time to its end."""
    return [(start - lead_minutes, start + session.duration_minutes) for start in session.starts]


def _week_profile(base: int, intervals: Iterable[tuple[int, int, int]]) -> list[int]:
    """Value per minute of a (cyclic) week: `base` plus every `(start, end, value)` covering that minute."""
    profile = [base] * WEEK
    for start, end, value in intervals:
        for minute in range(start, end):
            profile[minute % WEEK] += value
    return profile


def buffer_profile(base: int, sessions: Sequence[Session], lead_minutes: int) -> list[int]:
    """CapacityBuffer replicas per local minute: the pool's warm slots, plus each session's learners from its
    lead time to its start. From the start on the session's nodes are held by the budget window, not the buffer
    (a buffer kept up would keep `learners` slots free beside the learners' own pods: twice the nodes)."""
    return _week_profile(base, ((s - lead_minutes, s, x.learners) for x in sessions for s in x.starts))


def held_profile(base: int, sessions: Sequence[Session], lead_minutes: int) -> list[int]:
    """Slots the pool holds per local minute: warm slots plus the learners of every session in its window."""
    return _week_profile(base, ((a, b, x.learners) for x in sessions for a, b in windows(x, lead_minutes)))


def in_class_profile(base: int, sessions: Sequence[Session], utc_offset: Mapping[str, int]) -> list[int]:
    """GPU slots a lab's learners hold per minute of the week: `base` (e.g. the demo's pods) plus each session's
    learners from its start to its end (no lead time: the buffer's placeholders are not the lab's pods), on the
    UTC clock given each zone's offset, so sessions in several zones are compared on one clock."""
    return _week_profile(
        base,
        ((s - utc_offset[x.timezone], s - utc_offset[x.timezone] + x.duration_minutes, x.learners)
         for x in sessions for s in x.starts),
    )  # fmt: skip


def change_points(profile: Sequence[int]) -> list[tuple[int, int]]:
    """`(minute of week, new value)` wherever the value changes (the week wraps around)."""
    return [(minute, value) for minute, value in enumerate(profile) if value != profile[minute - 1]]


@dataclass(frozen=True)
class Change:
    """One CronJob: at `hour:minute` local time on `days`, set the buffer to `replicas`."""

    minute: int
    hour: int
    days: tuple[int, ...]
    replicas: int

    @property
    def schedule(self) -> str:
        return f"{self.minute} {self.hour} * * {','.join(DAY_NAMES[d] for d in self.days)}"


def buffer_changes(base: int, sessions: Sequence[Session], lead_minutes: int) -> list[Change]:
    """The buffer's change points grouped by time of day and value (one CronJob each), in time order."""
    grouped: dict[tuple[int, int], list[int]] = {}
    for minute, value in change_points(buffer_profile(base, sessions, lead_minutes)):
        grouped.setdefault((minute % DAY, value), []).append(minute // DAY)
    changes = [Change(tod % 60, tod // 60, tuple(sorted(days)), value) for (tod, value), days in grouped.items()]
    return sorted(changes, key=lambda c: (c.hour, c.minute, c.days, c.replicas))


def shortest_gap_minutes(base: int, sessions: Sequence[Session], lead_minutes: int) -> int:
    """Shortest time between two consecutive buffer changes (a CronJob must never run after the next one)."""
    minutes = [m for m, _ in change_points(buffer_profile(base, sessions, lead_minutes))]
    if len(minutes) < 2:
        return WEEK
    return min((b - a) % WEEK for a, b in zip(minutes, [*minutes[1:], minutes[0] + WEEK], strict=True))


# --- budget windows (UTC) -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetWindow:
    schedule: str  # UTC cron
    duration_minutes: int

    @property
    def duration(self) -> str:
        return format_minutes(self.duration_minutes)


def budget_window(session: Session, lead_minutes: int) -> BudgetWindow:
    """A UTC window covering the session from its lead time to its end under every offset of its zone.

    It opens at the earliest UTC instant the local start can fall on (the largest offset, e.g. PDT = UTC-7 for
    America/Los_Angeles) and lasts the session plus the lead time plus the offsets' spread (1 h with DST), so it
    also covers the latest UTC end (PST = UTC-8): the same rule as prod's 08:00-18:00 Pacific freeze window.
    """
    offsets = utc_offsets(session.timezone)
    spread = offsets[-1] - offsets[0]
    starts_utc = sorted({(start - lead_minutes - offsets[-1]) % WEEK for start in session.starts})
    time_of_day = {m % DAY for m in starts_utc}
    assert len(time_of_day) == 1, "one local start time shifts every day alike"
    (tod,) = time_of_day
    days = ",".join(DAY_NAMES[m // DAY] for m in starts_utc)
    return BudgetWindow(f"{tod % 60} {tod // 60} * * {days}", lead_minutes + session.duration_minutes + spread)


# --- lead time: the modelled time to GPU (docs/operations.md "Time to GPU") ----------------------------


@dataclass(frozen=True)
class LeadStep:
    what: str
    seconds: int
    source: str


def lead_steps(*, pre_pulls: bool, fast_image_pull: bool) -> list[LeadStep]:
    """The cold time-to-GPU (docs/operations.md "Time to GPU"), step by step, plus the CronJob's own start."""
    steps = [
        LeadStep("CronJob starts its kubectl pod and patches the buffer", 60, "estimate: Job + pod on a system node"),
        LeadStep(
            "Karpenter batches the buffer's pods", 10, "batchMaxDuration 10s, charts/karpenter/values.yaml v1.14.1"
        ),
        LeadStep("instance launch to node Ready", 100, "aws/karpenter-provider-aws#3102"),
        LeadStep("NVIDIA device plugin advertises nvidia.com/gpu", 30, "estimate (seconds after Ready)"),
    ]
    if pre_pulls:
        steps.append(
            LeadStep(
                "gpuNodes.prePullImages pulled at boot", 67, "SOCI parallel pull, aws-samples/karpenter-blueprints"
            )
            if fast_image_pull
            else LeadStep(
                "gpuNodes.prePullImages pulled at boot", 138, "containerd default, aws-samples/karpenter-blueprints"
            )
        )
    return steps


def lead_minutes_for(*, pre_pulls: bool, fast_image_pull: bool) -> int:
    """Lead time in whole minutes: the modelled time to GPU, rounded up."""
    return math.ceil(
        sum(step.seconds for step in lead_steps(pre_pulls=pre_pulls, fast_image_pull=fast_image_pull)) / 60
    )


# --- summary figures (each Karpenter pool of the resolved model holds its own: components/settings/resolved.py) ---


def node_hours(profile: Sequence[int], slots_per_node: int) -> float:
    """GPU node-hours per week holding `profile` slots on nodes of `slots_per_node` slots."""
    return sum(math.ceil(slots / slots_per_node) for slots in profile) / 60


def peak_in_windows(profile: Sequence[int], session: Session, lead_minutes: int) -> int:
    """The most slots the pool holds at any minute of this session's windows."""
    return max(profile[m % WEEK] for a, b in windows(session, lead_minutes) for m in range(a, b))


class NodeShape(Protocol):
    """One instance type of a pool as the figures read it (the resolved model's `NodeCapacity`)."""

    @property
    def instance_type(self) -> str: ...
    @property
    def vcpus(self) -> int: ...
    @property
    def slots(self) -> int: ...
    def nodes_for(self, wanted_slots: int) -> int: ...


def smallest_node(nodes: Sequence[NodeShape]) -> NodeShape:
    """The type with the fewest slots per node (then the fewest vCPUs): the cheapest warm node."""
    return min(nodes, key=lambda node: (node.slots, node.vcpus, node.instance_type))


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


def session_peaks(
    held: Sequence[int], sessions: Sequence[Session], lead_minutes: int, nodes: Sequence[NodeShape]
) -> tuple[SessionPeak, ...]:
    """Per session of one pool (`held`: its `held_profile`; `nodes`: its types), its peak and what it needs."""
    small = smallest_node(nodes)
    rows = []
    for session in sessions:
        peak = peak_in_windows(held, session, lead_minutes)
        rows.append(
            SessionPeak(
                lab=session.lab,
                key=session.key,
                pool=session.pool,
                when=f"{session.schedule} {session.timezone}, {format_minutes(session.duration_minutes)}",
                learners=session.learners,
                lead_minutes=lead_minutes,
                peak_slots=peak,
                instance_type=small.instance_type,
                nodes=small.nodes_for(peak),
                vcpus=small.nodes_for(peak) * small.vcpus,
                max_vcpus=max(node.nodes_for(peak) * node.vcpus for node in nodes),
            )
        )
    return tuple(rows)


@dataclass(frozen=True)
class PoolWeek:
    pool: str
    instance_type: str
    timetable_node_hours: float  # GPU node-hours a week holding warm slots + session windows
    around_the_clock_node_hours: float  # the same peak headroom kept all week

    @property
    def saved_node_hours(self) -> float:
        return self.around_the_clock_node_hours - self.timetable_node_hours


def pool_week(pool: str, held: Sequence[int], nodes: Sequence[NodeShape]) -> PoolWeek:
    """One pool's GPU node-hours a week on its smallest type: its timetable vs its peak held around the clock."""
    small = smallest_node(nodes)
    return PoolWeek(
        pool=pool,
        instance_type=small.instance_type,
        timetable_node_hours=node_hours(held, small.slots),
        around_the_clock_node_hours=node_hours([max(held)] * WEEK, small.slots),
    )


@dataclass(frozen=True)
class NodeLifetime:
    pool: str
    longest: str  # e.g. "4h15m" or "unbounded"
    why: str


def node_lifetime(pool: str, expire_after: str, termination_grace_period: str, hold_seconds: int) -> NodeLifetime:
    """Expiry starts a forceful drain at expireAfter; terminationGracePeriod later every pod is gone.
    `hold_seconds`: the longest a node must keep one lab pod alive (0: none)."""
    expire = parse_seconds(expire_after)
    grace = parse_seconds(termination_grace_period) or 0
    sessions = (
        f"; lab pods need {format_seconds(hold_seconds + SESSION_POD_GRACE_SECONDS)} "
        "(lead + longest session, or a hub's maxHours, + pod grace), so expiry never ends one"
        if hold_seconds
        else ""
    )
    if expire is None:
        return NodeLifetime(
            pool,
            "unbounded",
            f"expireAfter Never; a drift drain forces out do-not-disrupt pods after terminationGracePeriod "
            f"{termination_grace_period}{sessions}",
        )
    return NodeLifetime(
        pool,
        format_seconds(expire + grace),
        f"expireAfter {expire_after} starts a forceful drain (budgets do not stop it); do-not-disrupt "
        f"pods hold it at most terminationGracePeriod {termination_grace_period}{sessions}",
    )
