"""The synth's human summary: what the plan holds and how much GPU each pool can schedule."""

from __future__ import annotations

from pathlib import Path

from components.gpu_capacity import capacity_rows, lab_slot_warning, max_schedulable_slots
from components.settings import StackSettings
from offline.plan import Plan


def render_summary(settings: StackSettings, plan: Plan, stack: str, out_dir: Path) -> str:
    counts = plan.type_counts()
    lines = [
        f"gpu-platform stack '{stack}': {len(plan.resources)} resources, {len(plan.manifests)} Kubernetes objects, "
        f"{len(plan.helm)} Helm charts -> {out_dir}",
        "",
        "Resources by type:",
        *(f"  {count:4d}  {type_token}" for type_token, count in sorted(counts.items())),
        "",
        "GPU capacity (schedulable nvidia.com/gpu = physical GPUs x sharing replicas):",
        f"  {'pool':<22}{'instance type':<16}{'GPUs/node':>10}{'sharing':>18}{'gpu/node':>10}{'at limit':>10}",
    ]
    for row in capacity_rows(settings):
        lines.append(
            f"  {row.pool:<22}{row.instance_type:<16}{row.physical_gpus:>10}{row.sharing:>18}"
            f"{row.schedulable_per_node:>10}{row.schedulable_at_limit:>10}"
        )
    lines += _lab_lines(settings)
    return "\n".join(lines)


def _lab_lines(settings: StackSettings) -> list[str]:
    if not settings.labs:
        return []
    lines = [
        "",
        f"Learning labs (GPU slots = ResourceQuota requests.nvidia.com/gpu; pools provide at most "
        f"{max_schedulable_slots(settings)}):",
        f"  {'lab':<22}{'GPU slots':>10}{'members':>10}",
        *(f"  {lab.name:<22}{lab.gpu_slots:>10}{len(lab.members):>10}" for lab in settings.labs),
        f"  {'total':<22}{sum(lab.gpu_slots for lab in settings.labs):>10}",
    ]
    warning = lab_slot_warning(settings)
    return [*lines, *([f"  {warning}"] if warning else [])]
