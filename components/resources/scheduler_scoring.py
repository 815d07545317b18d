"""Pack, don't spread: `MostAllocated` NodeResourcesFit scoring on the EKS cluster's kube-scheduler.

kube-scheduler's default `LeastAllocated` spreads learners' notebooks over the warm nodes, so a node that
empties during class never fills and `WhenEmpty` consolidation never removes it. EKS lets a cluster set the
scheduler's NodeResourcesFit scoring strategy (aws/containers-roadmap#1468, EKS guide "Advanced Kubernetes
control plane configuration", Kubernetes >= 1.31). pulumi-aws 7.51.1 has it on `aws.eks.Cluster`
(`kube_scheduler_config`, pulumi_aws/eks/_inputs.py `ClusterKubeSchedulerConfigArgs` ->
`ClusterKubeSchedulerConfigNodeResourcesFitArgs.scoring_strategy` ->
`ClusterKubeSchedulerConfigNodeResourcesFitScoringStrategyArgs(type, resources[name, weight 1-100])`);
pulumi-eks 4.4.0's `Cluster` does not expose it. As with node repair (`node_repair.py`), a resource transform
on the pulumi-eks component reaches its child `aws:eks/cluster:Cluster`.

The effect is cluster-wide (docs/cost.md "Packing"): every pod the default scheduler places, system pods
included (CoreDNS, Karpenter, the hub), prefers the fullest node that fits. The system node group is
fixed-size and its pods spread by their own topology rules, so only GPU and CPU user nodes gain.
"""

from __future__ import annotations

import copy
from typing import Final

import pulumi

from components.facts.constants import EKS_CLUSTER_TYPE, MOST_ALLOCATED, SCORING_WEIGHTS
from components.settings import ClusterSettings

KUBE_SCHEDULER_CONFIG: Final = {
    "nodeResourcesFit": {
        "scoringStrategy": {
            "type": MOST_ALLOCATED,
            "resources": [{"name": name, "weight": weight} for name, weight in SCORING_WEIGHTS],
        }
    }
}


def pack_scheduling(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
    """Sets `kubeSchedulerConfig` (MostAllocated) on the EKS cluster a pulumi-eks Cluster creates."""
    if args.type_ != EKS_CLUSTER_TYPE:
        return None
    config = copy.deepcopy(KUBE_SCHEDULER_CONFIG)
    return pulumi.ResourceTransformResult(props={**args.props, "kubeSchedulerConfig": config}, opts=args.opts)


def scheduler_scoring_transforms(cluster: ClusterSettings) -> list[pulumi.ResourceTransform]:
    return [pack_scheduling] if cluster.most_allocated_scoring else []
