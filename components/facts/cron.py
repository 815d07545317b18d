"""Disruption-budget schedules checked the way Karpenter reads them: as UTC cron.

Karpenter's NodePool CRD only pattern-checks `schedule` (a macro, or any five words), then parses it
at runtime with robfig/cron's standard parser in UTC (kubernetes-sigs/karpenter
pkg/apis/v1/nodepool.go, `Budget.IsActive`: `cron.ParseStandard(fmt.Sprintf("TZ=UTC %s", ...))`);
a schedule that parser rejects makes the budget fail at runtime. `check_schedule` applies the
same field rules (robfig/cron v3 parser.go: bounds, names, `*`/`?`, ranges, steps) up front.
"""

from __future__ import annotations

from dataclasses import dataclass

# The macros the NodePool CRD pattern allows (robfig also knows `@every`, which the CRD rejects).
MACROS = ("@annually", "@yearly", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int]


_FIELDS = (
    _Field("minute", 0, 59, {}),
    _Field("hour", 0, 23, {}),
    _Field("day of month", 1, 31, {}),
    _Field("month", 1, 12, {name: number for number, name in enumerate(_MONTHS, start=1)}),
    _Field("day of week", 0, 6, {name: number for number, name in enumerate(_DAYS)}),
)

SCHEDULE_HELP = (
    "a UTC cron schedule: five fields 'minute hour day-of-month month day-of-week' "
    "(numbers, names like mon-fri or jan, ranges a-b, lists a,b, steps */n), e.g. '0 8 * * mon-fri', "
    f"or one of {', '.join(MACROS)}"
)


class CronError(ValueError):
    """A schedule Karpenter's cron parser would reject."""


def _number(text: str, field: _Field) -> int:
    lowered = text.lower()
    if lowered in field.names:
        return field.names[lowered]
    if not text.isdigit():
        allowed = f"{field.low}-{field.high}" + (f" or {_names_hint(field)}" if field.names else "")
        raise CronError(f"{field.name} '{text}' is not a number ({allowed})")
    value = int(text)
    if not field.low <= value <= field.high:
        raise CronError(f"{field.name} {value} is out of range {field.low}-{field.high}")
    return value


def _names_hint(field: _Field) -> str:
    names = list(field.names)
    return f"{names[0]}..{names[-1]}"


def _check_part(part: str, field: _Field) -> None:
    range_text, slash, step_text = part.partition("/")
    if slash and (not step_text.isdigit() or int(step_text) == 0):
        raise CronError(f"{field.name} step '/{step_text}' must be a positive whole number")
    if range_text in ("*", "?"):
        return
    start_text, dash, end_text = range_text.partition("-")
    start = _number(start_text, field)
    if dash and start > _number(end_text, field):
        raise CronError(f"{field.name} range '{range_text}' starts after it ends")


def check_schedule(schedule: str) -> str:
    """`schedule` unchanged if Karpenter can parse it; else `CronError` saying what is wrong, in words."""
    text = schedule.strip()
    if text.startswith("@"):
        if text not in MACROS:  # robfig/cron matches descriptors case-sensitively
            raise CronError(f"'{schedule}' is not a known macro")
        return schedule
    if text.upper().startswith(("TZ=", "CRON_TZ=")):
        raise CronError("time zones are not supported; Karpenter reads schedules in UTC")
    fields = text.split()
    if len(fields) != len(_FIELDS):
        raise CronError(f"'{schedule}' has {len(fields)} field(s), cron needs exactly 5")
    for value, field in zip(fields, _FIELDS, strict=True):
        for part in value.split(","):
            if not part:
                raise CronError(f"{field.name} '{value}' has an empty list item")
            _check_part(part, field)
    return schedule


def _expand_part(part: str, field: _Field) -> set[int]:
    range_text, _, step_text = part.partition("/")
    step = int(step_text) if step_text else 1
    if range_text in ("*", "?"):
        low, high = field.low, field.high
    else:
        start_text, dash, end_text = range_text.partition("-")
        low = _number(start_text, field)
        # robfig/cron: `n/step` runs from n to the field's end.
        high = _number(end_text, field) if dash else (field.high if step_text else low)
    return set(range(low, high + 1, step))


def expand(schedule: str) -> tuple[frozenset[int], ...]:
    """The values each of the five fields allows (minute, hour, day of month, month, day of week: 0 = Sunday).

    Macros are not expanded (a timetable names its times). Raises `CronError` like `check_schedule`.
    """
    check_schedule(schedule)
    if schedule.strip().startswith("@"):
        raise CronError(f"'{schedule}' is a macro; write the five fields")
    return tuple(
        frozenset().union(*(_expand_part(part, field) for part in value.split(",")))
        for value, field in zip(schedule.split(), _FIELDS, strict=True)
    )


def is_unrestricted(schedule: str, index: int) -> bool:
    """Whether field `index` of `schedule` starts with `*` or `?` (robfig's day-of-month / day-of-week rule)."""
    return schedule.split()[index].startswith(("*", "?"))


def fires_at(schedule: str, minute: int, hour: int, day: int, month: int, weekday: int) -> bool:
    """Whether a five-field schedule fires at this wall-clock minute (weekday 0 = Sunday).

    As robfig/cron (and the CronJob controller): when both day of month and day of week are restricted,
    either may match; otherwise both must.
    """
    minutes, hours, days, months, weekdays = expand(schedule)
    if minute not in minutes or hour not in hours or month not in months:
        return False
    if is_unrestricted(schedule, 2) or is_unrestricted(schedule, 4):
        return day in days and weekday in weekdays
    return day in days or weekday in weekdays
