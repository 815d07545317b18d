"""EKS node auto repair on the managed node groups (system and GPU).

pulumi-eks 4.4.0's `ManagedNodeGroup` has no `nodeRepairConfig` input (checked: no such argument in
pulumi_eks/managed_node_group.py), while the `aws.eks.NodeGroup` it creates does (pulumi-aws 7.51.1
`node_repair_config`). A Pulumi resource transform on the component reaches that child: the engine applies
`transforms` to the children of packaged (remote) components too.
"""

from __future__ import annotations

import pulumi

from components.facts.constants import EKS_NODE_GROUP_TYPE
from components.facts.node_monitoring import NODE_REPAIR_CONFIG
from components.settings import ObservabilitySettings


def enable_node_repair(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Sets `nodeRepairConfig` on the EKS node group a pulumi-eks ManagedNodeGroup creates."""
    if args.type_ != EKS_NODE_GROUP_TYPE:
        return None
    return pulumi.ResourceTransformResult(
        props={**args.props, "nodeRepairConfig": dict(NODE_REPAIR_CONFIG)}, opts=args.opts
    )


def node_repair_transforms(observability: ObservabilitySettings) -> list[pulumi.ResourceTransform]:
    return [enable_node_repair] if observability.node_repair else []
