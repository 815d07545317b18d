"""Observability as plain data: EKS add-on configuration values, the agent's trust policy, the alarms.

Pure: settings in, dicts out, no Pulumi import. `components/observability.py` turns them into resources.

Metric names and dimensions are the ones AWS documents for Container Insights with enhanced
observability on EKS ("Amazon EKS and Kubernetes Container Insights with enhanced observability
metrics", AmazonCloudWatch/latest/monitoring/Container-Insights-metrics-enhanced-EKS): namespace
`ContainerInsights`; `cluster_node_count` (ClusterName); `node_gpu_limit`, `node_gpu_usage_total`,
`node_gpu_utilization`, `node_gpu_memory_utilization` (ClusterName | ClusterName, InstanceId, NodeName);
`pod_gpu_request`, `pod_gpu_utilization`, `pod_gpu_memory_utilization` (ClusterName | ClusterName,
Namespace | ClusterName, Namespace, PodName). The agent's metric declarations list the same sets
(aws/amazon-cloudwatch-agent translator/translate/otel/exporter/awsemf, enhanced Container Insights).
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
from components.renderers.demo_manifests import DEMO_GPUS_PER_POD, managed_group_slots
from components.renderers.gpu_capacity import capacity_rows, warm_headroom_rows
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
# Per-pod GPU use: the agent turns the exporter's per-process series (pod/namespace labels) into these
# (ClusterName, Namespace | ClusterName, Namespace, PodName | ...).
POD_GPU_UTILIZATION: Final = "pod_gpu_utilization"
POD_GPU_MEMORY_UTILIZATION: Final = "pod_gpu_memory_utilization"


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
    The chart's dcgm-exporter is off (`dcgmExporter.enabled`, default true; templates/linux/
    dcgm-exporter-daemonset.yaml renders nothing without it): it would start a second DCGM host engine on
    every GPU node and cannot be pointed at another one, nor configured for per-pod use on shared GPUs. The
    platform's own exporter (renderers/dcgm_exporter_manifests.py) takes its place behind the same Service,
    so the agent's GPU metrics keep flowing (docs/gpu-health.md).
    """
    return {
        "tolerations": [{"operator": "Exists"}],
        "containerLogs": {"enabled": False},
        "dcgmExporter": {"enabled": False},
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
    that key), so the topic gets a customer-managed key that names CloudWatch. The CloudWatch statement is
    the one AWS documents, without a condition (AWS Knowledge Center "How do I configure a CloudWatch alarm
    with an encrypted SNS topic?", repost.aws/knowledge-center/cloudwatch-configure-alarm-sns,
    `Allow_CloudWatch_for_CMK`, here without underscores, which IAM Sids do not allow): SNS calls KMS on CloudWatch's behalf, and a source-account condition is not
    documented for that call, so it could silently drop every notification. AWS's `kms:GenerateDataKey*` is
    narrowed to the two calls SNS makes for a service publishing to an encrypted topic (AWS End User Messaging
    SMS guide "Amazon SNS access policy", "Access policy for encrypted Amazon SNS topics": `kms:GenerateDataKey`,
    `kms:Decrypt`). Least privilege is kept by the
    topic policy (`alarm_topic_policy`), which admits only this cluster's alarms; the key encrypts nothing
    but this topic. In a key policy `Resource: "*"` means this key.
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
                "Sid": "AllowCloudWatchForCMK",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": "*",
            },
        ],
    }


def alarm_topic_policy(
    topic_arn: str, account_id: str, partition: str, region: str, cluster_name: str
) -> dict[str, Any]:
    """SNS topic policy: CloudWatch may publish only for this cluster's alarms in this account and region.

    AWS Knowledge Center "Why didn't I receive an SNS notification for my CloudWatch alarm trigger?"
    (repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger, `Allow_Publish_Alarms` with
    `ArnLike aws:SourceArn`) and the SNS Developer Guide "Example cases for Amazon SNS access control"
    (`aws:SourceAccount` for service principals). Principals of the account keep their IAM permissions:
    within one account an identity policy suffices where the resource policy does not deny.
    """
    return {
        "Version": IAM_POLICY_VERSION,
        "Statement": [
            {
                "Sid": "AllowPublishAlarms",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": "sns:Publish",
                "Resource": topic_arn,
                "Condition": {
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{partition}:cloudwatch:{region}:{account_id}:alarm:{cluster_name}-*"
                    },
                    "StringEquals": {"aws:SourceAccount": account_id},
                },
            }
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
    System nodes count at `systemNodes.desiredSize`: nothing resizes that group but an operator, so in
    steady state every stuck GPU node is seen. While a rolling update of the system group surges it above
    desiredSize for longer than the window the alarm may fire and clears when the update ends; counting
    at maxSize instead would hide (maxSize - desiredSize) stuck GPU nodes all the time (README
    "GPU fleet health": the trade-off).
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


def intended_idle_gpu_nodes(settings: StackSettings) -> int:
    """GPU nodes that may run idle on purpose: the managed group's floor, the warm headroom's, the demo's.

    Managed GPU group: its desiredSize nodes are always on (nothing resizes the group), and the demo
    lands there first. Warm headroom: per pool the instance type that holds the most nodes (Karpenter may
    pick any). The demo (TensorFlow finds the GPU, then sleeps at 0% utilisation) is an idle workload the
    stack asks for: its slots beyond what the managed group holds count as intended Karpenter nodes, on
    the instance type with the fewest slots per node.
    """
    group = settings.gpu_node_group
    floor = group.desired_size if group.enabled else 0
    warm: dict[str, int] = {}
    for row in warm_headroom_rows(settings):
        warm[row.pool] = max(warm.get(row.pool, 0), row.nodes_held)
    demo_slots = settings.demo.replicas * DEMO_GPUS_PER_POD if settings.demo.enabled else 0
    demo_slots = max(0, demo_slots - managed_group_slots(settings))
    slots_per_node = [row.schedulable_per_node for row in capacity_rows(settings)]
    demo_nodes = math.ceil(demo_slots / min(slots_per_node)) if demo_slots and slots_per_node else 0
    return floor + sum(warm.values()) + demo_nodes


def idle_gpu_alarm(settings: StackSettings) -> AlarmSpec:
    """More GPU nodes than the intended idle ones run for N hours while even the busiest GPU stays below the threshold.

    `node_gpu_limit` events per hour / events per node per hour = GPU nodes averaged over the hour. An extra
    node must run for more than half the hour (+0.5) so a sample of jitter never counts as a node.
    """
    observability = settings.observability
    intended = intended_idle_gpu_nodes(settings)
    samples_per_node = IDLE_PERIOD_SECONDS // COLLECTION_INTERVAL_SECONDS
    return AlarmSpec(
        name=f"{settings.cluster_name}-idle-gpus",
        description=(
            f"More than {intended} GPU node(s) of {settings.cluster_name} (the warm slots' nodes and the demo's, "
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


def alarms(settings: StackSettings) -> tuple[AlarmSpec, ...]:
    return (stuck_gpu_node_alarm(settings), idle_gpu_alarm(settings))
