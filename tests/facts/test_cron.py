"""Disruption-budget schedules: what Karpenter's cron parser (robfig/cron, UTC) accepts, and what not."""

from __future__ import annotations

import pytest

from components.facts.cron import MACROS, CronError, check_schedule

ACCEPTED = [
    "0 8 * * mon-fri", "*/15 * * * *", "0 0 1 jan,jul *", "30 22 * * SAT,sun", "0 9-17/2 * * 1-5",
    "59 23 31 12 6", "0 0 ? * *", "5/10 0 1-7 * 1", " 0 8 * * *  ", *MACROS,
]  # fmt: skip
# (schedule, fragment of the reason)
REJECTED = [
    ("weekdays from 8am to 6pm", "not a number"),
    ("0 8 * *", "exactly 5"),
    ("0 0 8 * * *", "exactly 5"),
    ("60 * * * *", "out of range 0-59"),
    ("0 24 * * *", "out of range 0-23"),
    ("0 0 0 * *", "out of range 1-31"),
    ("0 0 * 13 *", "out of range 1-12"),
    ("0 0 * * 7", "out of range 0-6"),
    ("0 0 * * monday", "not a number"),
    ("*/0 * * * *", "positive whole number"),
    ("0 18-8 * * *", "starts after it ends"),
    ("0 8,,9 * * *", "empty list item"),
    ("@every 1h", "not a known macro"),
    ("@Daily", "not a known macro"),
    ("TZ=UTC 0 8 * * *", "UTC"),
    ("CRON_TZ=Europe/Berlin 0 8 * * *", "UTC"),
]


@pytest.mark.parametrize("schedule", ACCEPTED)
def test_karpenter_schedules_are_accepted(schedule: str) -> None:
    assert check_schedule(schedule) == schedule


@pytest.mark.parametrize(("schedule", "reason"), REJECTED)
def test_what_is_not_cron_is_rejected_with_a_reason(schedule: str, reason: str) -> None:
    with pytest.raises(CronError, match=reason):
        check_schedule(schedule)
