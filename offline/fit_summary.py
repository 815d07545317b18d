"""The synth summary's fit block: per node group, allocatable, requested, free and the largest pod that must fit
(the fit model: components/settings/checks/fit.py, fit_placement.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from components.facts.node_allocatable import Allocatable
from components.settings.checks.fit_placement import GroupFit


def _amount(value: Allocatable) -> str:
    return f"{value.cpu_millicores}m / {value.memory_mib} MiB"


def _names(fit: GroupFit) -> str:
    counts = Counter(pod.name for pod in fit.pods)
    return ", ".join(f"{name} x{count}" if count > 1 else name for name, count in counts.items()) or "none"


def fit_lines(fits: Sequence[GroupFit]) -> list[str]:
    """The block for the node groups' fits (`group_fits`, in their order)."""
    lines = [
        "",
        "Node fit (Karpenter's allocatable model, pinned add-on and chart requests; components/settings/checks/fit.py):",
        f"  {'group':<20}{'nodes':<22}{'allocatable':>22}{'requested':>22}{'free':>22}  largest must-fit pod",
    ]
    for fit in fits:
        nodes = f"{fit.nodes} x {fit.instance_type}" if fit.group.packed else f"per {fit.instance_type}"
        largest = fit.largest
        biggest = f"{largest.name} ({_amount(largest.requests)})" if largest is not None else "none"
        lines.append(
            f"  {fit.group.name:<20}{nodes:<22}{_amount(fit.allocatable):>22}{_amount(fit.requested):>22}"
            f"{_amount(fit.free):>22}  {biggest}"
        )
        lines.append(f"    DaemonSets: {', '.join(ds.name for ds in fit.daemonsets)}")
        roomiest = f" (most free on one node: {_amount(fit.most_free_on_a_node)})" if fit.most_free_on_a_node else ""
        lines.append(f"    pods: {_names(fit)}{roomiest}")
    lines.append(
        "  (the system group: all its nodes, requested = DaemonSets on each + every pod placed there; any other group: "
        "one node of its smallest type, requested = its DaemonSets; each of its pods fits one node of some type)"
    )
    return lines
