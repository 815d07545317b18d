"""The Container Insights metrics the GPU alarms and the GPU dashboard read, and how often the agent sends them.

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

from typing import Final

from components.facts.constants import CONTAINER_INSIGHTS_NAMESPACE

# The agent publishes one EMF event per node (and pod) per collection interval; the alarms count
# those events, so the interval is pinned here instead of hanging on the agent's default.
COLLECTION_INTERVAL_SECONDS: Final = 60
METRIC_NAMESPACE: Final = CONTAINER_INSIGHTS_NAMESPACE

# Metric names (the module docstring names the AWS page that documents them).
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
