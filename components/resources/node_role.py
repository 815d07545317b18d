"""The IAM role EC2 worker nodes assume, with exactly the managed policies nodes need."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.facts.constants import IAM_POLICY_VERSION, NODE_ROLE_MANAGED_POLICIES

EC2_TRUST_POLICY = json.dumps(
    {
        "Version": IAM_POLICY_VERSION,
        "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
    },
    sort_keys=True,
)


@dataclass(frozen=True)
class NodeRole:
    role: aws.iam.Role
    # Node groups wait for these: a node whose role lacks its policies cannot join or pull images.
    attachments: list[aws.iam.RolePolicyAttachment]


def create_node_role(resource_name: str, role_name: str, tags: Mapping[str, str], parent: pulumi.Resource) -> NodeRole:
    """A node role named `role_name` with NODE_ROLE_MANAGED_POLICIES attached (children of `parent`)."""
    role = aws.iam.Role(
        resource_name,
        name=role_name,
        assume_role_policy=EC2_TRUST_POLICY,
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    attachments = [
        aws.iam.RolePolicyAttachment(
            f"{resource_name}-{policy}",
            role=role.name,
            policy_arn=f"arn:aws:iam::aws:policy/{policy}",
            opts=pulumi.ResourceOptions(parent=parent),
        )
        for policy in NODE_ROLE_MANAGED_POLICIES
    ]
    return NodeRole(role, attachments)
