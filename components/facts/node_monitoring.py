"""What the EKS node monitoring agent and the CloudWatch Observability add-on run on GPU nodes, at their pinned
chart versions (aws/eks-node-monitoring-agent v1.6.6, amazon-cloudwatch-observability 6.4.0).

Upstream facts, read by the renderers that decide which DaemonSet runs a DCGM host engine on each GPU node
(`components/renderers/observability/dcgm_engines.py`), the platform's own dcgm-exporter, EKS node auto repair
(`components/resources/node_repair.py`) and the synth summary.
"""

from __future__ import annotations

from typing import Final

# aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/values.yaml @ v1.6.6, `dcgmAgent.affinity`
# (node.kubernetes.io/instance-type In ...): the NVIDIA types of this platform's GPU catalog that it lists.
NODE_MONITORING_DCGM_INSTANCE_TYPES: Final = frozenset(
    {
        "g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge", "g4dn.8xlarge", "g4dn.12xlarge", "g4dn.16xlarge",
        "g4dn.metal", "g5.xlarge", "g5.2xlarge", "g5.4xlarge", "g5.8xlarge", "g5.12xlarge", "g5.16xlarge",
        "g5.24xlarge", "g5.48xlarge", "g6.xlarge", "g6.2xlarge", "g6.4xlarge", "g6.8xlarge", "g6.12xlarge",
        "g6.16xlarge", "g6.24xlarge", "g6.48xlarge", "g6e.xlarge", "g6e.2xlarge", "g6e.4xlarge", "g6e.8xlarge",
        "g6e.12xlarge", "g6e.16xlarge", "g6e.24xlarge", "g6e.48xlarge", "g6f.large", "g6f.xlarge", "g6f.2xlarge",
        "g6f.4xlarge", "p4d.24xlarge", "p5.48xlarge",
    }
)  # fmt: skip
CLOUDWATCH_DCGM_EXPORTER: Final = "dcgm-exporter"  # the chart's `dcgm-exporter.name` default

# A node whose AcceleratedHardwareReady stays False after DCGM recovered (aws/eks-node-monitoring-agent#266,
# fix PR #275 still open): restarting the agent's pod on that node re-reads the condition. The add-on runs in
# kube-system; its pods carry `app.kubernetes.io/name: eks-node-monitoring-agent` (chart v1.6.6 _helpers.tpl
# `selectorLabels`, `nameOverride`). NODE is the node's name.
LATCH_RECOVERY_COMMAND: Final = (
    "kubectl -n kube-system delete pod -l app.kubernetes.io/name=eks-node-monitoring-agent "
    "--field-selector spec.nodeName=NODE"
)

# The add-on's chart collects these fields (templates/linux/dcgm-exporter-daemonset.yaml `metricsConfig` @
# amazon-cloudwatch-observability-6.4.0); the agent maps them to its node_/pod_/container_gpu_* metrics.
CLOUDWATCH_GPU_COUNTERS: Final = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB)."),
    ("DCGM_FI_DEV_FB_USED_PERCENT", "gauge", "Percentage used of Frame Buffer: Used/(Total - Reserved)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Tensor Core utilization (in %)."),
    ("DCGM_FI_DRIVER_VERSION", "label", "Driver Version."),
)

# EKS repairs with the node monitoring agent's conditions (and NodeReady); an unhealthy node is replaced.
# The guard for a monitor-wide fault (aws/eks-node-monitoring-agent#266: one DCGM host engine outage leaves
# `AcceleratedHardwareReady=False` latched): when more than one node of a group is unhealthy at once, the
# cause is the monitor, not the GPUs, so EKS stops repairing (`maxUnhealthyNodeThresholdCount`, "count
# threshold of unhealthy nodes, above which node auto repair actions will stop"), and it never replaces more
# than one node at a time (`maxParallelNodesRepairedCount`). Field names: the EKS NodeRepairConfig as
# pulumi-aws 7.51.1 `aws.eks.NodeGroup` `nodeRepairConfig` spells them. Karpenter's own repair has the same
# kind of stop built in (more than 20% of a NodePool unhealthy; docs/gpu-health.md).
MAX_UNHEALTHY_NODES: Final = 1
NODE_REPAIR_CONFIG: Final = {
    "enabled": True,
    "maxUnhealthyNodeThresholdCount": MAX_UNHEALTHY_NODES,
    "maxParallelNodesRepairedCount": 1,
}
