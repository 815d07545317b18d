"""`cost-week.svg`: per GPU pool, the simulated week as a picture. Written directly (no plotting library), with
fixed ids and fixed number formatting, so two synths write the same bytes.

Per pool, one panel over the week (UTC, Sunday to Sunday): slots in use (learners and the demo), slots held
(on nodes that exist), the nodes, and the floor's nodes, each the maximum over 15-minute buckets; the
sessions are shaded and labelled. Ids: `<pool>-in-use`, `<pool>-held`, `<pool>-nodes`, `<pool>-floor`;
session bands carry `class="session"`.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from components.renderers.report.cost_demand import DAY_S, WEEK_S
from components.renderers.report.cost_forecast import PoolForecast, PoolPlan

BUCKET_MIN = 15
WIDTH, PANEL_H, LEFT, TOP, GAP = 960, 180, 48, 44, 64
PLOT_W = WIDTH - LEFT - 16
SERIES = (  # (id suffix, colour, legend)
    ("in-use", "#1f77b4", "slots in use"),
    ("held", "#ff7f0e", "slots held"),
    ("nodes", "#2ca02c", "nodes"),
    ("floor", "#7f7f7f", "floor nodes"),
)
DAYS = ("Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat")


def _buckets(values: Sequence[int]) -> list[int]:
    return [max(values[i : i + BUCKET_MIN]) for i in range(0, len(values), BUCKET_MIN)]


def _series(result: PoolForecast, cache: dict[int, dict[str, list[int]]]) -> dict[str, list[int]]:
    """The panel's four series; pools simulated once share their run, so their buckets are worked out once."""
    key = id(result.run)
    if key not in cache:
        run = result.run
        cache[key] = {
            "in-use": _buckets(run.in_use),
            "held": _buckets(run.held),
            "nodes": _buckets(run.nodes),
            "floor": _buckets(result.floor_nodes),
        }
    return cache[key]


def _path(values: Sequence[int], top: int, scale: float) -> str:
    """A step line: horizontal runs, a vertical step only where the value changes."""
    step = PLOT_W / len(values)
    base = top + PANEL_H
    parts = [f"M{LEFT:.1f},{base - values[0] * scale:.1f}"]
    for index in range(1, len(values)):
        if values[index] != values[index - 1]:
            x = LEFT + index * step
            parts.append(f"H{x:.1f}V{base - values[index] * scale:.1f}")
    parts.append(f"H{LEFT + PLOT_W:.1f}")
    return "".join(parts)


def _panel(plan: PoolPlan, result: PoolForecast, top: int, cache: dict[int, dict[str, list[int]]]) -> list[str]:
    series = _series(result, cache)
    peak = max(1, *(max(values) for values in series.values()))
    scale = (PANEL_H - 8) / peak
    pool = escape(plan.name)
    ratio = f"{result.ratio_to_floor:.2f}x floor" if result.ratio_to_floor else "no floor"
    parts = [
        f'<g id="{pool}">',
        f'<text x="{LEFT}" y="{top - 8}" font-size="13">{pool}: ${result.dollars:.2f}/week, '
        f"{result.node_hours:.1f} node-hours, {ratio}</text>",
        f'<rect x="{LEFT}" y="{top}" width="{PLOT_W}" height="{PANEL_H}" fill="none" stroke="#ccc"/>',
    ]
    for session in plan.sessions:
        x = LEFT + session.start_week_s / WEEK_S * PLOT_W
        w = session.duration_s / WEEK_S * PLOT_W
        parts.append(
            f'<rect class="session" x="{x:.1f}" y="{top}" width="{max(w, 1.0):.1f}" height="{PANEL_H}" '
            f'fill="#fdd" opacity="0.6"><title>{escape(session.label)}</title></rect>'
        )
        parts.append(
            f'<text class="session-label" x="{x:.1f}" y="{top + 12}" font-size="9">{escape(session.label)}</text>'
        )
    for day in range(7):
        x = LEFT + day * DAY_S / WEEK_S * PLOT_W
        parts.append(f'<text x="{x + 2:.1f}" y="{top + PANEL_H + 12}" font-size="10">{DAYS[day]}</text>')
    parts.append(f'<text x="4" y="{top + 10}" font-size="10">{peak}</text>')
    for suffix, colour, _ in SERIES:
        parts.append(
            f'<path id="{pool}-{suffix}" d="{_path(series[suffix], top, scale)}" fill="none" stroke="{colour}" '
            'stroke-width="1.2"/>'
        )
    parts.append("</g>")
    return parts


def render(title: str, panels: Sequence[tuple[PoolPlan, PoolForecast]]) -> str:
    height = TOP + max(1, len(panels)) * (PANEL_H + GAP) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        'font-family="sans-serif">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="16" font-size="14">{escape(title)}</text>',
    ]
    x = LEFT  # the legend on its own line under the title, which can be long
    for _suffix, colour, legend in SERIES:
        parts.append(f'<text x="{x}" y="32" font-size="11" fill="{colour}">{legend}</text>')
        x += 110
    if not panels:
        parts.append(f'<text x="{LEFT}" y="{TOP + 20}" font-size="12">no GPU pool to forecast</text>')
    cache: dict[int, dict[str, list[int]]] = {}
    for index, (plan, result) in enumerate(panels):
        parts += _panel(plan, result, TOP + 20 + index * (PANEL_H + GAP), cache)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
