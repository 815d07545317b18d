"""An IAM role an add-on's service account gets through EKS Pod Identity: the role, its AWS-managed policy and
the association. Used by the CloudWatch agent (observability) and the EFS CSI controller (lab hubs)."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.renderers.access.pod_identity import pod_identity_trust_policy


@dataclass(frozen=True)
class PodIdentityRole:
    role: aws.iam.Role
    attachment: aws.iam.RolePolicyAttachment
    association: aws.eks.PodIdentityAssociation

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What a pod of the service account needs before it starts: the policy attached and the association."""
        return [self.association, self.attachment]


def pod_identity_role(
    name: str,
    *,
    role_suffix: str,
    cluster_name: str,
    eks_cluster_name: pulumi.Input[str],
    service_account: tuple[str, str],
    managed_policy: str,
    tags: dict[str, str],
    parent: pulumi.Resource,
) -> PodIdentityRole:
    """Role `<cluster>-<role_suffix>` for `namespace/service_account` of this cluster only, `managed_policy` attached.

    `name` is the logical name of all three resources."""
    namespace, account = service_account
    child = pulumi.ResourceOptions(parent=parent)
    partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=parent)).partition
    role = aws.iam.Role(
        name,
        name=f"{cluster_name}-{role_suffix}",
        assume_role_policy=json.dumps(pod_identity_trust_policy(cluster_name, namespace, account)),
        tags=tags,
        opts=child,
    )
    attachment = aws.iam.RolePolicyAttachment(
        name,
        role=role.name,
        policy_arn=partition.apply(lambda p: f"arn:{p}:iam::aws:policy/{managed_policy}"),
        opts=child,
    )
    association = aws.eks.PodIdentityAssociation(
        name,
        cluster_name=eks_cluster_name,
        namespace=namespace,
        service_account=account,
        role_arn=role.arn,
        tags=tags,
        opts=child,
    )
    return PodIdentityRole(role, attachment, association)
