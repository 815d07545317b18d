"""The weekly dollar difference between two synth outputs, for `python -m offline.diff OLD NEW`.

Reads each folder's `cost-forecast.json` (offline/cost.py). A folder written before the forecast existed has
none: its column and the difference say "n/a".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offline.cost import FORECAST_FILE, read_forecast

NA = "n/a"


def weekly_dollars(document: dict[str, Any] | None) -> dict[str, float]:
    """Line name (a GPU pool, or a fixed line such as `system nodes`) -> its forecast dollars a week."""
    if document is None:
        return {}
    lines = {f"pool {name}": float(figures["dollars"]) for name, figures in document.get("pools", {}).items()}
    lines |= {name: float(figures["dollars"]) for name, figures in document.get("fixed", {}).items()}
    return lines


def _money(value: float | None) -> str:
    return NA if value is None else f"${value:,.2f}"


def _delta(old: float | None, new: float | None) -> str:
    if old is None or new is None:
        return NA
    return f"{new - old:+,.2f} $"


def render_cost(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[str]:
    """A Markdown table: per line the old and new weekly dollars and the difference, then the total."""
    before, after = weekly_dollars(old), weekly_dollars(new)
    lines = [
        "",
        "#### Weekly cost forecast (simulated week, on-demand prices; docs/cost.md)",
        "",
        "| line | old $/week | new $/week | difference |",
        "|---|---:|---:|---:|",
    ]
    for name in sorted(before.keys() | after.keys()):
        was = before.get(name) if old is not None else None
        now = after.get(name, 0.0 if new is not None else None)
        if old is not None and name not in before:
            was = 0.0
        lines.append(f"| {name} | {_money(was)} | {_money(now)} | {_delta(was, now)} |")
    total_old = sum(before.values()) if old is not None else None
    total_new = sum(after.values()) if new is not None else None
    lines.append(f"| **total** | {_money(total_old)} | {_money(total_new)} | **{_delta(total_old, total_new)}** |")
    if old is None:
        lines.append(f"\nThe old plan has no {FORECAST_FILE} (written before the forecast existed): n/a.")
    return lines


def cost_section(old_dir: str, new_dir: str) -> list[str]:
    return render_cost(read_forecast(Path(old_dir)), read_forecast(Path(new_dir)))
