"""Observability as plain data: EKS add-on configuration values, the agent's trust policy, the alarms.

Pure: settings in, dicts out, no Pulumi import. `components/observability.py` turns them into resources.

Metric names and dimensions are the ones AWS documents for Container Insights with enhanced
observability on EKS ("Amazon EKS and Kubernetes Container Insights with enhanced observability
metrics", AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS): namespace
`ContainerInsights`; `cluster_node_count` (ClusterName); `node_gpu_limit`, `node_gpu_usage_total`,
`node_gpu_utilization`, `node_gpu_memory_utilization` (ClusterName | ClusterName, InstanceId, NodeName);
`pod_gpu_request` (ClusterName | ClusterName, Namespace, PodName).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from components.constants import (
    CLOUDWATCH_AGENT_NAMESPACE,
    CLOUDWATCH_AGENT_SERVICE_ACCOUNT,
    CONTAINER_INSIGHTS_NAMESPACE,
    GPU_TOLERATION,
    IAM_POLICY_VERSION,
)
from components.renderers.pod_identity import pod_identity_trust_policy
from components.settings import StackSettings

CLOUDWATCH_AGENT_POLICY: Final = "CloudWatchAgentServerPolicy"  # AWS managed: least privilege for the agent

# The agent publishes one EMF event per node (and pod) per collection interval; the alarms count
# those events, so the interval is pinned here instead of hanging on the agent's default.
COLLECTION_INTERVAL_SECONDS: Final = 60
METRIC_NAMESPACE: Final = CONTAINER_INSIGHTS_NAMESPACE
STUCK_PERIOD_SECONDS: Final = 300
IDLE_PERIOD_SECONDS: Final = 3600

# Metric names (see the module docstring for the AWS page that documents them).
CLUSTER_NODE_COUNT: Final = "cluster_node_count"
NODE_GPU_LIMIT: Final = "node_gpu_limit"
NODE_GPU_USAGE: Final = "node_gpu_usage_total"
NODE_GPU_UTILIZATION: Final = "node_gpu_utilization"
NODE_GPU_MEMORY_UTILIZATION: Final = "node_gpu_memory_utilization"
POD_GPU_REQUEST: Final = "pod_gpu_request"
DOCUMENTED_GPU_METRICS: Final = frozenset(
    {
        CLUSTER_NODE_COUNT,
        NODE_GPU_LIMIT,
        NODE_GPU_USAGE,
        NODE_GPU_UTILIZATION,
        NODE_GPU_MEMORY_UTILIZATION,
        POD_GPU_REQUEST,
    }
)


def node_monitoring_agent_configuration() -> dict[str, Any]:
    """Configuration values of the `eks-node-monitoring-agent` add-on.

    aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/values.yaml @ v1.6.6: the node agent
    tolerates everything (`operator: Exists`), restated here so the guarantee does not hang on a default;
    the `dcgm-server` DaemonSet (nv-hostengine for the NVIDIA monitor's DCGM checks, affinity: NVIDIA
    instance types only) has `tolerations: []`, so without ours it never runs on a tainted GPU node.
    Keys checked against charts/configuration.schema.json @ v1.6.6 (additionalProperties: false).
    """
    return {
        "nodeAgent": {"tolerations": [{"operator": "Exists"}]},
        "dcgmAgent": {"tolerations": [dict(GPU_TOLERATION)]},
    }


def cloudwatch_observability_configuration() -> dict[str, Any]:
    """Configuration values of the `amazon-cloudwatch-observability` add-on.

    Container Insights with enhanced observability and the accelerated-compute (NVIDIA DCGM) metrics,
    collected every minute. The chart fills in `cluster_name` and the region when the config leaves
    them out (aws-observability/helm-charts charts/amazon-cloudwatch-observability/templates/_helpers.tpl
    `cloudwatch-agent.config-modifier` @ amazon-cloudwatch-observability-6.4.0). Root `tolerations`
    apply to every component without its own, the dcgm-exporter DaemonSet included (`common.tolerations`);
    the chart's default `operator: Exists` is restated so GPU nodes are covered explicitly.
    Container logs (Fluent Bit) stay off: GPU metrics are the point, and log ingestion is billed per GB.
    """
    return {
        "tolerations": [{"operator": "Exists"}],
        "containerLogs": {"enabled": False},
        "agent": {
            "config": {
                "logs": {
                    "metrics_collected": {
                        "kubernetes": {
                            "enhanced_container_insights": True,
                            "accelerated_compute_metrics": True,
                            "metrics_collection_interval": COLLECTION_INTERVAL_SECONDS,
                        }
                    }
                }
            }
        },
    }


def cloudwatch_agent_trust_policy(cluster_name: str) -> dict[str, Any]:
    """EKS Pod Identity may assume the agent role only for amazon-cloudwatch/cloudwatch-agent of this cluster."""
    return pod_identity_trust_policy(cluster_name, CLOUDWATCH_AGENT_NAMESPACE, CLOUDWATCH_AGENT_SERVICE_ACCOUNT)


def alarm_topic_key_policy(account_id: str, partition: str) -> dict[str, Any]:
    """KMS key policy of the alarm topic's key: the account administers it, CloudWatch alarms may use it.

    CloudWatch cannot publish to a topic encrypted with the AWS-managed `aws/sns` key (it cannot use
    that key), so the topic gets a customer-managed key that names CloudWatch, for this account only.
    In a key policy `Resource: "*"` means this key.
    """
    return {
        "Version": IAM_POLICY_VERSION,
        "Statement": [
            {
                "Sid": "AllowAccountToAdministerKey",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
                "Action": "kms:*",
                "Resource": "*",
            },
            {
                "Sid": "AllowCloudWatchAlarmsToPublish",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey*"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:SourceAccount": account_id}},
            },
        ],
    }


def subscription_protocol(endpoint: str) -> str:
    """SNS protocol of one configured subscriber (settings allow e-mail, SQS and Lambda)."""
    if endpoint.startswith("arn:"):
        return endpoint.split(":")[2]  # "sqs" or "lambda"
    return "email"


# --- alarms ---------------------------------------------------------------------------------------


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


def stuck_gpu_node_alarm(settings: StackSettings) -> AlarmSpec:
    """GPU nodes that joined but advertise no `nvidia.com/gpu` (driver or device plugin failure).

    The agent publishes `node_gpu_limit` only for nodes whose GPU capacity is not 0 (otel-contrib
    receiver/awscontainerinsightreceiver ... `getNodeStatusCapacityGPUs(); ok && != 0`), so a stuck node
    shows up as a node without it: nodes - nodes reporting GPUs - system nodes. The events of
    `node_gpu_limit` per period, divided by events per node per period, count the GPU-reporting nodes.
    Every non-system node of this platform is a GPU node (managed GPU group, Karpenter GPU pools).
    """
    observability = settings.observability
    samples_per_node = STUCK_PERIOD_SECONDS // COLLECTION_INTERVAL_SECONDS
    system_nodes = settings.system_nodes.desired_size
    return AlarmSpec(
        name=f"{settings.cluster_name}-stuck-gpu-node",
        description=(
            f"A GPU node of {settings.cluster_name} has advertised no nvidia.com/gpu for "
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
                expression=f"nodes - FILL(gpuevents, 0) / {samples_per_node} - {system_nodes}",
                label="GPU nodes without nvidia.com/gpu",
                return_data=True,
            ),
        ),
        # No data means no Container Insights data at all, not a stuck node.
        treat_missing_data="notBreaching",
    )


def idle_gpu_alarm(settings: StackSettings) -> AlarmSpec:
    """GPU nodes running for N hours while even the busiest GPU stays below the threshold."""
    observability = settings.observability
    return AlarmSpec(
        name=f"{settings.cluster_name}-idle-gpus",
        description=(
            f"The GPUs of {settings.cluster_name} have stayed below {observability.idle_gpu_threshold_percent}% "
            f"utilisation for {observability.idle_gpu_hours} hour(s) while GPU nodes run: a forgotten lab or an "
            "oversized GPU floor is burning money. Scale the workload or gpuNodeGroup down."
        ),
        comparison_operator="LessThanThreshold",
        threshold=float(observability.idle_gpu_threshold_percent),
        evaluation_periods=observability.idle_gpu_hours,
        queries=(MetricQuery("busiest", NODE_GPU_UTILIZATION, "Maximum", IDLE_PERIOD_SECONDS, return_data=True),),
        # No GPU nodes, no metric, nothing to pay for.
        treat_missing_data="notBreaching",
    )


def alarms(settings: StackSettings) -> tuple[AlarmSpec, ...]:
    return (stuck_gpu_node_alarm(settings), idle_gpu_alarm(settings))
