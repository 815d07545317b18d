"""The Karpenter controller's IAM: its Pod Identity trust policy and six policies, as plain dicts (no Pulumi).

The six controller policies reproduce the official Karpenter 1.14.1 getting-started CloudFormation
(`website/content/en/docs/getting-started/getting-started-with-karpenter/cloudformation.yaml` at tag
v1.14.1): every Sid, action, resource and condition, scoped to one cluster by the same tag conditions.
The controller authenticates with EKS Pod Identity, so its trust policy names `pods.eks.amazonaws.com`.
The interruption queue it consumes and the EventBridge rules that feed it are in `karpenter_interruption`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from components.facts.constants import IAM_POLICY_VERSION, KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT
from components.renderers.access.pod_identity import pod_identity_trust_policy

PolicyDocument = dict[str, Any]

# Policy purpose -> the official ManagedPolicy it reproduces (`KarpenterController<Name>Policy-${ClusterName}`).
CONTROLLER_POLICY_PURPOSES: Final = {
    "node-lifecycle": "NodeLifecycle",
    "iam-integration": "IAMIntegration",
    "eks-integration": "EKSIntegration",
    "interruption": "Interruption",
    "zonal-shift": "ZonalShift",
    "resource-discovery": "ResourceDiscovery",
}


@dataclass(frozen=True)
class AwsScope:
    """Where the controller acts: the partition, region and account of one cluster."""

    partition: str
    region: str
    account_id: str
    cluster_name: str

    def ec2_arn(self, resource: str) -> str:
        return f"arn:{self.partition}:ec2:{self.region}:*:{resource}"

    @property
    def cluster_arn(self) -> str:
        return f"arn:{self.partition}:eks:{self.region}:{self.account_id}:cluster/{self.cluster_name}"

    @property
    def instance_profile_arn(self) -> str:
        return f"arn:{self.partition}:iam::{self.account_id}:instance-profile/*"

    @property
    def cluster_tag(self) -> str:
        return f"kubernetes.io/cluster/{self.cluster_name}"


def policy_document(*statements: dict[str, Any], policy_id: str | None = None) -> PolicyDocument:
    document: PolicyDocument = {"Version": IAM_POLICY_VERSION}
    if policy_id:
        document["Id"] = policy_id
    document["Statement"] = list(statements)
    return document


def _allow(
    sid: str, actions: list[str], resources: list[str], condition: dict[str, Any] | None = None
) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}
    if condition:
        statement["Condition"] = condition
    return statement


# --- trust policies ---------------------------------------------------------------------------------


def controller_trust_policy(cluster_name: str) -> PolicyDocument:
    """EKS Pod Identity may assume the controller role, only for kube-system/karpenter of this cluster."""
    return pod_identity_trust_policy(cluster_name, KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT)


# --- the six controller policies ---------------------------------------------------------------------


def node_lifecycle_policy(scope: AwsScope) -> PolicyDocument:
    """Launch, tag and terminate instances (and their launch templates) owned by this cluster's NodePools."""
    owned = {f"aws:ResourceTag/{scope.cluster_tag}": "owned"}
    owned_by_nodepool = {"StringEquals": owned, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}
    request_tags = {
        f"aws:RequestTag/{scope.cluster_tag}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": scope.cluster_name,
    }
    tagged_resources = [
        scope.ec2_arn(kind)
        for kind in (
            "fleet/*", "instance/*", "volume/*", "network-interface/*", "launch-template/*", "spot-instances-request/*",
        )
    ]  # fmt: skip
    return policy_document(
        _allow(
            "AllowScopedEC2InstanceAccessActions",
            ["ec2:RunInstances", "ec2:CreateFleet"],
            [
                f"arn:{scope.partition}:ec2:{scope.region}::image/*",
                f"arn:{scope.partition}:ec2:{scope.region}::snapshot/*",
                scope.ec2_arn("security-group/*"),
                scope.ec2_arn("subnet/*"),
                scope.ec2_arn("capacity-reservation/*"),
                scope.ec2_arn("placement-group/*"),
            ],
        ),
        _allow(
            "AllowScopedEC2LaunchTemplateAccessActions",
            ["ec2:RunInstances", "ec2:CreateFleet"],
            [scope.ec2_arn("launch-template/*")],
            owned_by_nodepool,
        ),
        _allow(
            "AllowScopedEC2InstanceActionsWithTags",
            ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            tagged_resources,
            {"StringEquals": request_tags, "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}},
        ),
        _allow(
            "AllowScopedResourceCreationTagging",
            ["ec2:CreateTags"],
            tagged_resources,
            {
                "StringEquals": {
                    **request_tags,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        ),
        _allow(
            "AllowScopedResourceTagging",
            ["ec2:CreateTags"],
            [scope.ec2_arn("instance/*")],
            {
                **owned_by_nodepool,
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": scope.cluster_name},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        ),
        _allow(
            "AllowScopedDeletion",
            ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            [scope.ec2_arn("instance/*"), scope.ec2_arn("launch-template/*")],
            owned_by_nodepool,
        ),
    )


def iam_integration_policy(scope: AwsScope, node_role_arn: str) -> PolicyDocument:
    """Pass the node role to EC2 and manage the instance profiles Karpenter generates for EC2NodeClasses."""
    owned_here = {
        f"aws:ResourceTag/{scope.cluster_tag}": "owned",
        "aws:ResourceTag/topology.kubernetes.io/region": scope.region,
    }
    requested_here = {
        f"aws:RequestTag/{scope.cluster_tag}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": scope.cluster_name,
        "aws:RequestTag/topology.kubernetes.io/region": scope.region,
    }
    return policy_document(
        _allow(
            "AllowPassingInstanceRole",
            ["iam:PassRole"],
            [node_role_arn],
            {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        ),
        _allow(
            "AllowScopedInstanceProfileCreationActions",
            ["iam:CreateInstanceProfile"],
            [scope.instance_profile_arn],
            {
                "StringEquals": requested_here,
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
        _allow(
            "AllowScopedInstanceProfileTagActions",
            ["iam:TagInstanceProfile"],
            [scope.instance_profile_arn],
            {
                "StringEquals": {**owned_here, **requested_here},
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        ),
        _allow(
            "AllowScopedInstanceProfileActions",
            ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            [scope.instance_profile_arn],
            {
                "StringEquals": owned_here,
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        ),
    )


def eks_integration_policy(scope: AwsScope) -> PolicyDocument:
    """Discover the API server endpoint and CA of this cluster only."""
    return policy_document(_allow("AllowAPIServerEndpointDiscovery", ["eks:DescribeCluster"], [scope.cluster_arn]))


def interruption_policy(queue_arn: str) -> PolicyDocument:
    """Consume this cluster's interruption queue."""
    return policy_document(
        _allow(
            "AllowInterruptionQueueActions",
            ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            [queue_arn],
        )
    )


def zonal_shift_policy(scope: AwsScope) -> PolicyDocument:
    """Read the ARC zonal-shift status of this cluster (the action has no resource ARN: `*` + condition)."""
    return policy_document(
        _allow(
            "AllowZonalShiftStatusReadOnly",
            ["arc-zonal-shift:GetManagedResource"],
            ["*"],
            {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": scope.cluster_arn}},
        )
    )


def resource_discovery_policy(scope: AwsScope) -> PolicyDocument:
    """Read-only discovery: instance types, offerings, prices, AMIs, subnets, security groups."""
    return policy_document(
        _allow(
            "AllowRegionalReadActions",
            [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            ["*"],
            {"StringEquals": {"aws:RequestedRegion": scope.region}},
        ),
        # Public SSM parameters (AMI aliases) have an empty account in their ARN.
        _allow(
            "AllowSSMReadActions",
            ["ssm:GetParameter"],
            [f"arn:{scope.partition}:ssm:{scope.region}::parameter/aws/service/*"],
        ),
        _allow("AllowPricingReadActions", ["pricing:GetProducts"], ["*"]),
        _allow("AllowUnscopedInstanceProfileListAction", ["iam:ListInstanceProfiles"], ["*"]),
        _allow("AllowInstanceProfileReadActions", ["iam:GetInstanceProfile"], [scope.instance_profile_arn]),
    )
