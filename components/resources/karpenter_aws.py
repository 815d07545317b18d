"""Karpenter's AWS side: the node identity, interruption handling and the controller identity.

Plain functions, not a component: each creates its resources as children of the `Karpenter` component
passed as `parent`, so the URNs stay those of resources created in `Karpenter` itself (a new child
component would put a new type in every URN = replacement in a live stack). The in-cluster side (charts,
pools) stays in `karpenter.py`, as terraform-aws-eks keeps `modules/karpenter` apart from the Helm release.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.facts.constants import (
    KARPENTER_CONTROLLER_ROLE_SUFFIX,
    KARPENTER_NAMESPACE,
    KARPENTER_SERVICE_ACCOUNT,
    KARPENTER_VERSION,
)
from components.renderers.karpenter import karpenter_iam, karpenter_interruption
from components.resources.node_role import create_node_role


@dataclass(frozen=True)
class StackContext:
    """What Karpenter's AWS side reads of the stack: the cluster's name, the region, the tags, protection."""

    cluster_name: str
    region: str
    tags: Mapping[str, str]
    protect_resources: bool


@dataclass(frozen=True)
class NodeIdentity:
    role: aws.iam.Role
    # Nodes can join only once their role has its policies and an access entry.
    ready: list[pulumi.Resource]


@dataclass(frozen=True)
class ControllerIdentity:
    role: aws.iam.Role
    # The controller starts only with its AWS permissions and Pod Identity credentials.
    ready: list[pulumi.Resource]


def policy_json(document: karpenter_iam.PolicyDocument) -> str:
    return json.dumps(document, sort_keys=True)


def create_node_identity(
    name: str, stack: StackContext, eks_cluster_name: pulumi.Input[str], parent: pulumi.Resource
) -> NodeIdentity:
    """The role of every node Karpenter launches, and the access entry that lets it join the cluster."""
    node_role = create_node_role(f"{name}-node", f"{stack.cluster_name}-karpenter-node", stack.tags, parent)
    node_access = aws.eks.AccessEntry(
        f"{name}-node",
        cluster_name=eks_cluster_name,
        principal_arn=node_role.role.arn,
        type="EC2_LINUX",
        tags=stack.tags,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return NodeIdentity(node_role.role, [node_access, *node_role.attachments])


def create_interruption_handling(name: str, stack: StackContext, parent: pulumi.Resource) -> aws.sqs.Queue:
    """EventBridge -> SQS -> controller: spot interruptions, rebalances, health and state changes."""
    cluster_name = stack.cluster_name
    child = pulumi.ResourceOptions(parent=parent)
    queue = aws.sqs.Queue(
        f"{name}-interruption",
        name=cluster_name,
        message_retention_seconds=karpenter_interruption.INTERRUPTION_QUEUE_RETENTION_SECONDS,
        sqs_managed_sse_enabled=True,
        tags=stack.tags,
        opts=pulumi.ResourceOptions(parent=parent, protect=stack.protect_resources),
    )
    aws.sqs.QueuePolicy(
        f"{name}-interruption",
        queue_url=queue.url,
        policy=queue.arn.apply(lambda arn: policy_json(karpenter_interruption.interruption_queue_policy(arn))),
        opts=child,
    )
    for purpose, (_, detail_type) in karpenter_interruption.INTERRUPTION_EVENTS.items():
        rule = aws.cloudwatch.EventRule(
            f"{name}-{purpose}",
            name=f"{cluster_name}-karpenter-{purpose}",
            description=f"Karpenter interruption handling: {detail_type}",
            event_pattern=json.dumps(karpenter_interruption.interruption_event_pattern(purpose), sort_keys=True),
            tags=stack.tags,
            opts=child,
        )
        aws.cloudwatch.EventTarget(
            f"{name}-{purpose}",
            rule=rule.name,
            target_id=karpenter_interruption.INTERRUPTION_QUEUE_TARGET_ID,
            arn=queue.arn,
            opts=child,
        )
    return queue


def create_controller_identity(
    name: str,
    stack: StackContext,
    eks_cluster_name: pulumi.Input[str],
    node_role: aws.iam.Role,
    queue: aws.sqs.Queue,
    parent: pulumi.Resource,
) -> ControllerIdentity:
    """The controller role (EKS Pod Identity) with the six official policies, and its association."""
    cluster_name = stack.cluster_name
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(
        f"{name}-controller",
        name=f"{cluster_name}{KARPENTER_CONTROLLER_ROLE_SUFFIX}",
        assume_role_policy=policy_json(karpenter_iam.controller_trust_policy(cluster_name)),
        tags=stack.tags,
        opts=child,
    )
    documents = _controller_policy_documents(stack, node_role, queue, parent)
    attachments: list[pulumi.Resource] = []
    for purpose, official in karpenter_iam.CONTROLLER_POLICY_PURPOSES.items():
        policy = aws.iam.Policy(
            f"{name}-{purpose}",
            name=f"{cluster_name}-karpenter-{purpose}",
            description=f"Karpenter {KARPENTER_VERSION} controller: KarpenterController{official}Policy",
            policy=documents[purpose].apply(policy_json),
            tags=stack.tags,
            opts=child,
        )
        attachments.append(
            aws.iam.RolePolicyAttachment(f"{name}-{purpose}", role=role.name, policy_arn=policy.arn, opts=child)
        )
    pod_identity = aws.eks.PodIdentityAssociation(
        f"{name}-controller",
        cluster_name=eks_cluster_name,
        namespace=KARPENTER_NAMESPACE,
        service_account=KARPENTER_SERVICE_ACCOUNT,
        role_arn=role.arn,
        tags=stack.tags,
        opts=child,
    )
    return ControllerIdentity(role, [*attachments, pod_identity])


def _controller_policy_documents(
    stack: StackContext, node_role: aws.iam.Role, queue: aws.sqs.Queue, parent: pulumi.Resource
) -> dict[str, pulumi.Output[karpenter_iam.PolicyDocument]]:
    identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=parent))
    scope = pulumi.Output.all(partition.partition, identity.account_id).apply(
        lambda values: karpenter_iam.AwsScope(
            partition=values[0], region=stack.region, account_id=values[1], cluster_name=stack.cluster_name
        )
    )
    # Each document waits only for the ARNs it names.
    return {
        "node-lifecycle": scope.apply(karpenter_iam.node_lifecycle_policy),
        "iam-integration": pulumi.Output.all(scope, node_role.arn).apply(
            lambda values: karpenter_iam.iam_integration_policy(values[0], values[1])
        ),
        "eks-integration": scope.apply(karpenter_iam.eks_integration_policy),
        "interruption": queue.arn.apply(karpenter_iam.interruption_policy),
        "zonal-shift": scope.apply(karpenter_iam.zonal_shift_policy),
        "resource-discovery": scope.apply(karpenter_iam.resource_discovery_policy),
    }
