"""EKS node auto repair on the managed node groups (system and GPU).

pulumi-eks 4.4.0's `ManagedNodeGroup` has no `nodeRepairConfig` input (checked: no such argument in
pulumi_eks/managed_node_group.py), while the `aws.eks.NodeGroup` it creates does (pulumi-aws 7.51.1
`node_repair_config`). A Pulumi resource transform on the component reaches that child: the engine applies
`transforms` to the children of packaged (remote) components too.
"""

from __future__ import annotations

from typing import Final

import pulumi

from components.settings import GpuNodeGroupSettings, ObservabilitySettings

NODE_GROUP_TYPE: Final = "aws:eks/nodeGroup:NodeGroup"
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


def enable_node_repair(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Sets `nodeRepairConfig` on the EKS node group a pulumi-eks ManagedNodeGroup creates."""
    if args.type_ != NODE_GROUP_TYPE:
        return None
    return pulumi.ResourceTransformResult(
        props={**args.props, "nodeRepairConfig": dict(NODE_REPAIR_CONFIG)}, opts=args.opts
    )


def node_repair_transforms(observability: ObservabilitySettings) -> list[pulumi.ResourceTransform]:
    return [enable_node_repair] if observability.node_repair else []


def node_repair_by_group(
    gpu_node_group: GpuNodeGroupSettings, observability: ObservabilitySettings
) -> list[tuple[str, bool]]:
    """(config key of each managed node group the stack creates, whether the transform sets nodeRepairConfig)."""
    groups = ["systemNodes", *(["gpuNodeGroup"] if gpu_node_group.enabled else [])]
    return [(group, observability.node_repair) for group in groups]
