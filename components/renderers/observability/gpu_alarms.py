"""The GPU alarms as plain data: a GPU node stuck without `nvidia.com/gpu`, and GPU nodes idling beyond the intended.

Pure: the sections and capacity rows they read in, `AlarmSpec`s out (CloudWatch PutMetricAlarm with metric
math over the Container Insights metrics in `container_insights_metrics`). `components/observability.py` turns them into MetricAlarms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from components.renderers.labs.demo_manifests import demo_slots_beyond
from components.renderers.observability.container_insights_metrics import (
    CLUSTER_NODE_COUNT,
    COLLECTION_INTERVAL_SECONDS,
    NODE_GPU_LIMIT,
    NODE_GPU_UTILIZATION,
)
from components.settings import (
    CapacityRow,
    DemoSettings,
    GpuNodeGroupSettings,
    ObservabilitySettings,
    SystemNodeGroupSettings,
    WarmHeadroomRow,
)

STUCK_PERIOD_SECONDS: Final = 300
IDLE_PERIOD_SECONDS: Final = 3600


@dataclass(frozen=True)
class MetricQuery:
    """One entry of a CloudWatch alarm's `metrics` (PutMetricAlarm `MetricDataQuery`)."""

    id: str
    metric_name: str | None = None
    stat: str | None = None
    period: int | None = None
    expression: str | None = None
    label: str | None = None
    return_data: bool = False


@dataclass(frozen=True)
class AlarmSpec:
    name: str
    description: str
    comparison_operator: str
    threshold: float
    evaluation_periods: int
    queries: tuple[MetricQuery, ...]
    treat_missing_data: str


def stuck_gpu_node_alarm(
    cluster_name: str, observability: ObservabilitySettings, system_nodes: SystemNodeGroupSettings
) -> AlarmSpec:
    """GPU nodes that joined but advertise no `nvidia.com/gpu` (driver or device plugin failure).

    The agent publishes `node_gpu_limit` only for nodes whose GPU capacity is not 0 (otel-contrib
    receiver/awscontainerinsightreceiver ... `getNodeStatusCapacityGPUs(); ok && != 0`), so a stuck node
    shows up as a node without it: nodes - nodes reporting GPUs - system nodes. The events of
    `node_gpu_limit` per period, divided by events per node per period, count the GPU-reporting nodes.
    Every non-system node of this platform is a GPU node (managed GPU group, Karpenter GPU pools).
    System nodes count at `systemNodes.desiredSize`: nothing resizes that group but an operator, so in
    steady state every stuck GPU node is seen. While a rolling update of the system group surges it above
    desiredSize for longer than the window the alarm may fire and clears when the update ends; counting
    at maxSize instead would hide (maxSize - desiredSize) stuck GPU nodes all the time (README
    "GPU fleet health": the trade-off).
    """
    samples_per_node = STUCK_PERIOD_SECONDS // COLLECTION_INTERVAL_SECONDS
    system_desired = system_nodes.desired_size
    return AlarmSpec(
        name=f"{cluster_name}-stuck-gpu-node",
        description=(
            f"A GPU node of {cluster_name} has advertised no nvidia.com/gpu for "
            f"{observability.stuck_gpu_node_minutes} minutes (driver or device plugin failure). Node repair "
            "does not cover it: find it with `kubectl get nodes -l nvidia.com/gpu=true` and delete its NodeClaim."
        ),
        comparison_operator="GreaterThanThreshold",
        threshold=0.5,  # at least one node (the per-node event count is an average, hence 0.5)
        evaluation_periods=max(1, math.ceil(observability.stuck_gpu_node_minutes * 60 / STUCK_PERIOD_SECONDS)),
        queries=(
            MetricQuery("nodes", CLUSTER_NODE_COUNT, "Average", STUCK_PERIOD_SECONDS),
            MetricQuery("gpuevents", NODE_GPU_LIMIT, "SampleCount", STUCK_PERIOD_SECONDS),
            MetricQuery(
                "stuck",
                expression=f"nodes - FILL(gpuevents, 0) / {samples_per_node} - {system_desired}",
                label="GPU nodes without nvidia.com/gpu",
                return_data=True,
            ),
        ),
        # No data means no Container Insights data at all, not a stuck node.
        treat_missing_data="notBreaching",
    )


@dataclass(frozen=True)
class IdleFleet:
    """What idles on purpose, as the idle alarm counts it: the managed group, the demo, the pools' warm headroom."""

    gpu_node_group: GpuNodeGroupSettings
    demo: DemoSettings
    managed_group_slots: int  # slots the managed group's desired nodes offer (0 while it is disabled)
    capacity_rows: tuple[CapacityRow, ...]  # every pool and instance type (`ResolvedStack.capacity_rows`)
    warm_rows: tuple[WarmHeadroomRow, ...]  # the warm headroom's nodes (`ResolvedStack.warm_headroom_rows`)


def intended_idle_gpu_nodes(fleet: IdleFleet) -> int:
    """GPU nodes that may run idle on purpose: the managed group's floor, the warm headroom's, the demo's.

    Managed GPU group: its desiredSize nodes are always on (nothing resizes the group), and the demo
    lands there first. Warm headroom: per pool the instance type that holds the most nodes (Karpenter may
    pick any). The demo (TensorFlow finds the GPU, then sleeps at 0% utilisation) is an idle workload the
    stack asks for: its slots beyond what the managed group holds count as intended Karpenter nodes, on
    the instance type with the fewest slots per node.
    """
    group = fleet.gpu_node_group
    floor = group.desired_size if group.enabled else 0
    warm: dict[str, int] = {}
    for row in fleet.warm_rows:
        warm[row.pool] = max(warm.get(row.pool, 0), row.nodes_held)
    demo_slots = demo_slots_beyond(fleet.demo, fleet.managed_group_slots)
    slots_per_node = [row.schedulable_per_node for row in fleet.capacity_rows]
    demo_nodes = math.ceil(demo_slots / min(slots_per_node)) if demo_slots and slots_per_node else 0
    return floor + sum(warm.values()) + demo_nodes


def idle_gpu_alarm(cluster_name: str, observability: ObservabilitySettings, fleet: IdleFleet) -> AlarmSpec:
    """More GPU nodes than the intended idle ones run for N hours while even the busiest GPU stays below the threshold.

    `node_gpu_limit` events per hour / events per node per hour = GPU nodes averaged over the hour. An extra
    node must run for more than half the hour (+0.5) so a sample of jitter never counts as a node.
    """
    intended = intended_idle_gpu_nodes(fleet)
    samples_per_node = IDLE_PERIOD_SECONDS // COLLECTION_INTERVAL_SECONDS
    return AlarmSpec(
        name=f"{cluster_name}-idle-gpus",
        description=(
            f"More than {intended} GPU node(s) of {cluster_name} (the warm slots' nodes and the demo's, "
            f"idle on purpose) have run for {observability.idle_gpu_hours} hour(s) while every GPU stayed below "
            f"{observability.idle_gpu_threshold_percent}% utilisation: a forgotten lab workload is burning money. "
            "The GPU dashboard's widget 'Least busy GPU pods' names them per namespace and pod (per-pod GPU use from "
            "the platform's dcgm-exporter); scale them down and Karpenter removes the empty nodes."
        ),
        comparison_operator="GreaterThanThreshold",
        threshold=0.5,  # the expression is 1 (idle) or 0
        evaluation_periods=observability.idle_gpu_hours,
        queries=(
            MetricQuery("gpuevents", NODE_GPU_LIMIT, "SampleCount", IDLE_PERIOD_SECONDS),
            MetricQuery("busiest", NODE_GPU_UTILIZATION, "Maximum", IDLE_PERIOD_SECONDS),
            MetricQuery(
                "idle",
                expression=(
                    f"IF(FILL(gpuevents, 0) / {samples_per_node} > {intended + 0.5} AND "
                    f"busiest < {observability.idle_gpu_threshold_percent}, 1, 0)"
                ),
                label="GPU nodes beyond the intended idle ones, all GPUs idle",
                return_data=True,
            ),
        ),
        # No GPU nodes, no metric, nothing to pay for.
        treat_missing_data="notBreaching",
    )


def alarms(
    cluster_name: str, observability: ObservabilitySettings, system_nodes: SystemNodeGroupSettings, fleet: IdleFleet
) -> tuple[AlarmSpec, ...]:
    return (
        stuck_gpu_node_alarm(cluster_name, observability, system_nodes),
        idle_gpu_alarm(cluster_name, observability, fleet),
    )
