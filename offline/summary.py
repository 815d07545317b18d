"""The synth's human summary: what the plan holds and how much GPU each pool can schedule."""

from __future__ import annotations

from pathlib import Path

from components.gpu_capacity import capacity_rows
from components.gpu_quota import quota_needs
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
    lines += [
        "",
        'EC2 vCPU quotas to have before the first `up` (service code ec2; README "Real use" for the formula):',
        *(f"  {need.code}  {need.name:<40}{need.vcpus:>6} vCPUs" for need in quota_needs(settings)),
    ]
    return "\n".join(lines)
