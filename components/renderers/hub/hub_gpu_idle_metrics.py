"""What operators see of the GPU idle reaper in CloudWatch: its metric namespace, the only IAM statement its
Pod Identity role holds, the dashboard widget and the alarm on nodes that give no per-process samples.

The reaper sends (gpu_reaper/service.py `window_metrics`), per window, `ReclaimedSlotHours` and
`NodesWithoutProcessSamples`, once with `ClusterName` + `Lab` and once with `ClusterName` alone, through
`PutMetricData` (gpu_reaper/cloudwatch.py). `PutMetricData` has no resource-level permission; the
`cloudwatch:namespace` condition key narrows it to this namespace (AWS Service Authorization Reference, Amazon
CloudWatch: `PutMetricData`, resource `*`, condition key `cloudwatch:namespace`).
"""

from __future__ import annotations

from typing import Any, Final

METRICS_NAMESPACE: Final = "GpuPlatform/GpuIdleReaper"
RECLAIMED: Final = "ReclaimedSlotHours"
BLIND_NODES: Final = "NodesWithoutProcessSamples"
ALARM_PERIOD_SECONDS: Final = 900
ALARM_EVALUATION_PERIODS: Final = 2


def metrics_policy() -> dict[str, Any]:
    """The reaper role's one statement: PutMetricData into its own namespace."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "PutGpuIdleReaperMetrics",
                "Effect": "Allow",
                "Action": "cloudwatch:PutMetricData",
                "Resource": "*",
                "Condition": {"StringEquals": {"cloudwatch:namespace": METRICS_NAMESPACE}},
            }
        ],
    }


def dashboard_widget(cluster_name: str, region: str, y: int, width: int, height: int) -> dict[str, Any]:
    """Slot-hours reclaimed per lab per hour, and nodes without per-process samples, on the GPU fleet dashboard."""

    def search(metric: str, stat: str) -> str:
        return (
            f'SEARCH(\'{{{METRICS_NAMESPACE},ClusterName,Lab}} MetricName="{metric}" '
            f"ClusterName=\"{cluster_name}\"', '{stat}', 3600)"
        )

    return {
        "type": "metric",
        "x": 0,
        "y": y,
        "width": width,
        "height": height,
        "properties": {
            "title": "GPU idle reaper: slot-hours reclaimed per lab, nodes without per-process GPU samples",
            "view": "timeSeries",
            "region": region,
            "period": 3600,
            "stat": "Sum",
            "metrics": [
                [{"expression": search(RECLAIMED, "Sum"), "id": "reclaimed", "label": "slot-hours reclaimed"}],
                [{"expression": search(BLIND_NODES, "Maximum"), "id": "blind", "label": "nodes without samples"}],
            ],
        },
    }


def with_widget(body: dict[str, Any], cluster_name: str, region: str) -> dict[str, Any]:
    """The dashboard `body` with the reaper's widget in a row of its own below the others."""
    widgets = body["widgets"]
    bottom = max((w["y"] + w["height"] for w in widgets), default=0)
    width = max((w["x"] + w["width"] for w in widgets), default=24)
    height = max((w["height"] for w in widgets if w["type"] == "metric"), default=6)
    return {**body, "widgets": [*widgets, dashboard_widget(cluster_name, region, bottom, width, height)]}


def blind_nodes_alarm(cluster_name: str) -> dict[str, Any]:
    """MetricAlarm arguments: some GPU node was busy with no per-process samples for two periods running."""
    return {
        "name": f"{cluster_name}-gpu-process-samples-missing",
        "alarm_description": (
            "A GPU node was busy while dcgm-exporter gave no per-process samples (DCGM pair mismatch or NVML "
            "ERROR_NOT_SUPPORTED): the GPU idle reaper treats its pods as unknown. docs/jupyterhub.md"
        ),
        "namespace": METRICS_NAMESPACE,
        "metric_name": BLIND_NODES,
        "dimensions": {"ClusterName": cluster_name},
        "statistic": "Maximum",
        "period": ALARM_PERIOD_SECONDS,
        "evaluation_periods": ALARM_EVALUATION_PERIODS,
        "threshold": 1,
        "comparison_operator": "GreaterThanOrEqualToThreshold",
        "treat_missing_data": "notBreaching",
    }
