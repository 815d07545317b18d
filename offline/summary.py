"""The synth's human summary: what the plan holds and how much GPU each pool can schedule."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from components.facts.constants import EKS_CLUSTER_TYPE, EKS_NODE_GROUP_TYPE, SCORING_WEIGHTS
from components.facts.node_monitoring import LATCH_RECOVERY_COMMAND, MAX_UNHEALTHY_NODES
from components.facts.placeholders import placeholder_values
from components.renderers.access.access_entries import matrix_lines
from components.renderers.device_plugin.gpu_capacity import (
    capacity_rows,
    lab_slot_warning,
    max_schedulable_slots,
    warm_headroom_rows,
)
from components.renderers.hub import hub_namespace, hub_profiles, hub_storage
from components.renderers.hub.hub_values import NOTEBOOK_UID
from components.renderers.karpenter.karpenter_packing import first_batch_rows, mixed_gpu_count_warnings
from components.renderers.labs.demo_manifests import DEMO_UID
from components.renderers.labs.gpu_quota import QuotaNeed, quota_needs
from components.renderers.observability.dcgm_engines import engine_rows
from components.renderers.timetable.timetable_report import node_lifetimes, pool_weeks, session_peaks
from components.settings import REGION_KEY, StackSettings, config_key
from components.settings.checks.fit_placement import GroupFit
from components.settings.checks.hubs import hub_warnings
from offline.cost import StackForecast, cost_lines
from offline.fit_summary import fit_lines
from offline.plan import Plan


def render_summary(
    settings: StackSettings,
    plan: Plan,
    stack: str,
    out_dir: Path,
    forecast: StackForecast,
    fits: Sequence[GroupFit],
) -> str:
    """The summary of a synth: its plan, the stack's resolved pools, its cost `forecast` (`stack_forecast`) and
    its node groups' `fits` (`group_fits`), both worked out once by the synth."""
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
    for row in capacity_rows(settings.resolved.pools):
        lines.append(
            f"  {row.pool:<22}{row.instance_type:<16}{row.physical_gpus:>10}{row.sharing:>18}"
            f"{row.schedulable_per_node:>10}{row.schedulable_at_limit:>10}"
        )
    lines += _slot_lines(settings)
    lines += _warm_headroom_lines(settings)
    lines += _first_batch_lines(settings)
    lines += _node_repair_lines(settings)
    lines += _scheduler_scoring_lines(settings)
    lines += _dcgm_engine_lines(settings)
    lines += [
        "",
        "EC2 vCPU quotas to have before the first `up` (service code ec2; the formula: docs/lifecycle.md):",
        *(f"  {need.code}  {need.name:<40}{need.vcpus:>6} vCPUs" for need in _quota_needs(settings)),
    ]
    lines += _lab_lines(settings)
    lines += _timetable_lines(settings)
    lines += _node_lifetime_lines(settings)
    lines += _hub_lines(settings)
    lines += fit_lines(fits)
    lines += cost_lines(forecast)
    return "\n".join([*lines, *_access_lines(settings), *_placeholder_lines(settings)])


def _slot_lines(settings: StackSettings) -> list[str]:
    """Per pool: its sharing kind, the GPU memory one slot gets and what is isolated (docs/sharing-kinds.md)."""
    lines = ["", "GPU slots (per pool: sharing kind, GPU memory per slot on its smallest GPU, isolation):"]
    for pool in settings.resolved.pools:
        slot = pool.slot
        fence = {"time-slicing": "fair share, not enforced", "mps": "capped per client"}.get(slot.kind, "its own")
        memory = f"{slot.memory_mib} MiB {fence}"
        lines.append(f"  {pool.name:<22}{slot.kind:<14}{memory:<35}{slot.isolation.describe()}")
    mps = [pool.name for pool in settings.resolved.pools if pool.slot_kind == "mps"]
    if mps and settings.demo.enabled and DEMO_UID != NOTEBOOK_UID:
        # MPS serves one client UID per GPU at a time (nvidia-cuda-mps-control(1)); docs/sharing-kinds.md.
        lines.append(
            f"  WARNING: the demo runs as UID {DEMO_UID}, notebooks as UID {NOTEBOOK_UID}: on MPS pools "
            f"({', '.join(mps)}) they take turns on a GPU; keep the demo off MPS pools"
        )
    return lines


def _quota_needs(settings: StackSettings) -> list[QuotaNeed]:
    return quota_needs(settings.gpu_node_group, settings.resolved)


def _access_lines(settings: StackSettings) -> list[str]:
    return ["", *matrix_lines(settings.cluster, settings.labs)]


def placeholder_keys(settings: StackSettings) -> list[tuple[str, str]]:
    """`(config key path, value)` for every setting that still holds a documentation value."""
    dumped = settings.model_dump(mode="json", by_alias=True)
    found: list[tuple[str, str]] = []
    for name, field in StackSettings.model_fields.items():
        key = REGION_KEY if name == "region" else config_key(name)
        found += placeholder_values(dumped[field.alias or name], key)
    return found


def _placeholder_lines(settings: StackSettings) -> list[str]:
    found = placeholder_keys(settings)
    if not found:
        return []
    return [
        "",
        "Replace before a real deploy (documentation values; `python -m policy.check DIR` rejects them):",
        *(f"  {key}: {value}" for key, value in found),
    ]


def _warm_headroom_lines(settings: StackSettings) -> list[str]:
    rows = warm_headroom_rows(settings.resolved.karpenter_pools)
    if not rows:
        return ["", "Warm GPU headroom: none (no pool sets warmGpuSlots)"]
    lines = [
        "",
        "Warm GPU headroom (CapacityBuffer; nodes held = ceil(warm slots / (GPUs x replicas))):",
        f"  {'pool':<22}{'instance type':<16}{'warm slots':>11}{'slots/node':>11}{'nodes held':>11}",
    ]
    for row in rows:
        lines.append(
            f"  {row.pool:<22}{row.instance_type:<16}{row.warm_slots:>11}{row.slots_per_node:>11}{row.nodes_held:>11}"
        )
    return lines


def _first_batch_lines(settings: StackSettings) -> list[str]:
    rows = first_batch_rows(settings.karpenter, settings.demo, settings.resolved)
    warnings = mixed_gpu_count_warnings(settings.karpenter)
    if not rows and not warnings:
        return []
    lines = [
        "",
        "First batch per pool (demo pods beyond the managed group + warm slots; Karpenter packing model, "
        "components/renderers/karpenter/karpenter_packing.py):",
        f"  {'pool':<22}{'demo slots':>11}{'warm slots':>11}{'nodes':>7}  instance type (slots per node)",
    ]
    for row in rows:
        nodes = ", ".join(f"{node.instance_type} ({node.slots})" for node in row.nodes)
        lines.append(f"  {row.pool:<22}{row.demo_slots:>11}{row.warm_slots:>11}{row.node_count:>7}  {nodes}")
    return [*lines, *(f"  {warning}" for warning in warnings)]


def _node_repair_lines(settings: StackSettings) -> list[str]:
    # A resource transform sets it on the NodeGroup inside pulumi-eks's component: the mocks never see
    # that child, so resources.json cannot show it.
    return [
        "",
        f"EKS node auto repair (nodeRepairConfig on the {EKS_NODE_GROUP_TYPE} of each managed node group; "
        f"it stops while more than {MAX_UNHEALTHY_NODES} node of a group is unhealthy and repairs one at a time; "
        "set by a transform at `up` time, so not provable offline; after `up` check "
        "`aws eks describe-nodegroup ... --query nodegroup.nodeRepairConfig`):",
        *(f"  {group:<22}{'enabled' if on else 'off'}" for group, on in _node_repair_by_group(settings)),
    ]


def _node_repair_by_group(settings: StackSettings) -> list[tuple[str, bool]]:
    """(config key of each managed node group the stack creates, whether the transform sets nodeRepairConfig)."""
    groups = ["systemNodes", *(["gpuNodeGroup"] if settings.gpu_node_group.enabled else [])]
    return [(group, settings.observability.node_repair) for group in groups]


def _scheduler_scoring_lines(settings: StackSettings) -> list[str]:
    # Like node repair: a transform sets it on the aws.eks.Cluster inside pulumi-eks, which the mocks never see.
    strategy = settings.cluster.scoring_strategy
    weights = ", ".join(f"{name} {weight}" for name, weight in SCORING_WEIGHTS)
    how = (
        f"set by a transform on the {EKS_CLUSTER_TYPE} (weights {weights}) at `up` time, so not provable offline; "
        "after `up` check `aws eks describe-cluster --query cluster.kubeSchedulerConfig`"
        if strategy == "MostAllocated"
        else "EKS's default (gpu-platform:cluster.mostAllocatedScoring is false): pods spread over nodes"
    )
    return ["", f"Scheduler scoring (NodeResourcesFit, cluster-wide, system pods included): {strategy}; {how}"]


def _dcgm_engine_lines(settings: StackSettings) -> list[str]:
    rows = engine_rows(settings.observability, settings.gpu_node_group, settings.karpenter)
    if not rows:
        return []
    lines = [
        "",
        "DCGM host engines per GPU node (exactly one; components/renderers/observability/dcgm_engines.py, docs/gpu-health.md):",
    ]
    for row in rows:
        engines = ", ".join(row.engines) or "none"
        flag = "" if len(row.engines) <= 1 else "  WARNING: more than one engine fights over the GPU's profiling fields"
        lines.append(f"  {row.pool:<22}engine: {engines}{flag}")
        if row.clients:
            lines.append(f"  {'':<22}served: {', '.join(row.clients)}")
    if settings.observability.node_repair:
        lines.append(
            f"  latched AcceleratedHardwareReady=False (aws/eks-node-monitoring-agent#266): {LATCH_RECOVERY_COMMAND}"
        )
    return lines


def _lab_lines(settings: StackSettings) -> list[str]:
    if not settings.labs:
        return []
    lines = [
        "",
        f"Learning labs (GPU slots = ResourceQuota requests.nvidia.com/gpu; pools provide at most "
        f"{max_schedulable_slots(settings.resolved.pools)}):",
        f"  {'lab':<22}{'GPU slots':>10}{'members':>10}",
        *(f"  {lab.name:<22}{lab.gpu_slots:>10}{len(lab.members):>10}" for lab in settings.labs),
        f"  {'total':<22}{sum(lab.gpu_slots for lab in settings.labs):>10}",
    ]
    warning = lab_slot_warning(settings.resolved.pools, settings.labs)
    return [*lines, *([f"  {warning}"] if warning else [])]


def _timetable_lines(settings: StackSettings) -> list[str]:
    pools = settings.resolved.karpenter_pools
    peaks = session_peaks(pools)
    if not peaks:
        return []
    lines = [
        "",
        "Lab timetable (docs/timetable.md; buffer raised at lead time, nodes held by budget windows to the end):",
        f"  {'session':<22}{'pool':<18}{'when':<42}{'learners':>9}{'lead':>6}{'peak slots':>11}"
        f"{'nodes':>7}{'vCPUs':>7}{'max vCPUs':>10}",
    ]
    for row in peaks:
        lines.append(
            f"  {row.key:<22}{row.pool:<18}{row.when:<42}{row.learners:>9}{row.lead_minutes:>5}m{row.peak_slots:>11}"
            f"{row.nodes:>7}{row.vcpus:>7}{row.max_vcpus:>10}"
        )
    lines.append(
        "  (nodes and vCPUs on the pool's smallest type; max vCPUs: on the type that would need the most, "
        "Karpenter stopping at cpuLimit, which the quota above covers)"
    )
    lines.append("  GPU node-hours a week, warm slots + sessions, vs the same peak headroom around the clock:")
    for week in pool_weeks(pools):
        lines.append(
            f"  {week.pool:<22}{week.instance_type:<16}timetable {week.timetable_node_hours:.1f} h, around the clock "
            f"{week.around_the_clock_node_hours:.1f} h, saved {week.saved_node_hours:.1f} h"
        )
    return lines


def _node_lifetime_lines(settings: StackSettings) -> list[str]:
    rows = node_lifetimes(settings.resolved.karpenter_pools)
    if not rows:
        return []
    return [
        "",
        "Longest a GPU node can live (expireAfter + terminationGracePeriod), and why:",
        *(f"  {row.pool:<22}{row.longest:<12}{row.why}" for row in rows),
    ]


def _hub_lines(settings: StackSettings) -> list[str]:
    """Per hub: where learners go, how they log in, the profiles; and how many homes the file system holds."""
    labs = hub_storage.hub_labs(settings.labs)
    if not labs:
        return []
    lines = [
        "",
        "JupyterHubs (zero-to-jupyterhub 4.4.0; the hub in <lab>-hub, notebooks in the lab; docs/jupyterhub.md):",
    ]
    for lab in labs:
        hub = lab.hub
        assert hub is not None
        scheme = "https" if hub.certificate_arn else "http"
        hub_ns = hub_namespace.hub_namespace(lab.name)
        where = hub.hostname or f"the load balancer's DNS name (kubectl get svc proxy-public -n {hub_ns})"
        balancer = "internal NLB" if hub.internal else "internet-facing NLB"
        lines.append(
            f"  {lab.name}: {scheme}://{where}  ({balancer}, login {hub.auth.type}, idle cull {hub.idle_minutes} min, "
            f"max {hub.max_hours} h, database {hub.database})"
        )
        lines += [
            f"    runs in {hub_ns} (no member rights): hub, proxy, culler, GPU idle reaper, the hub's Secrets and "
            f"database; in {lab.name} (quota, LimitRange, fences, guard): notebooks, home PVCs, Role hub-spawner",
            *(
                f"    profile {p.slug:<24}{p.display_name}"
                for p in hub_profiles.profiles(settings.resolved.hub_pools(hub))
            ),
        ]
    lines += [f"  WARNING: {key}: {message}" for key, message in hub_warnings(settings)]
    lines.append(
        f"  Home directories: one EFS access point per learner; the file system holds "
        f"{hub_storage.ACCESS_POINTS_PER_FILE_SYSTEM:,} learners across all hubs (access points per file system: "
        f"EFS CreateAccessPoint; aws-efs-csi-driver#1806)"
    )
    return lines
