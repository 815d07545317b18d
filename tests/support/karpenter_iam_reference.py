"""The official Karpenter 1.14.1 controller IAM statements, and how ours are compared with them.

EXPECTED_POLICIES transcribes the six `AWS::IAM::ManagedPolicy` documents of the getting-started
CloudFormation (aws/karpenter-provider-aws, website/content/en/docs/getting-started/
getting-started-with-karpenter/cloudformation.yaml @ v1.14.1) with its placeholders: ${P} partition, ${R} region,
${A} account, ${C} ClusterName, ${NODE_ROLE_ARN} = KarpenterNodeRole.Arn, ${QUEUE_ARN} =
KarpenterInterruptionQueue.Arn. Differences from the CloudFormation, all presentational:
- our documents always write Action/Resource as lists (CFN mixes strings and lists; IAM treats them alike),
  so both sides are normalized to sorted lists before comparing;
- our policy names are f"{cluster}-karpenter-<purpose>" (CFN: KarpenterController<Name>Policy-${C}).

Used by tests/karpenter/test_karpenter_iam.py (the renderers karpenter_iam and karpenter_interruption) and
tests/karpenter/test_karpenter_plan.py (the synthesized plan).
"""

from __future__ import annotations

import json
from string import Template
from typing import Any

from components.renderers.karpenter import karpenter_iam

_EC2 = "arn:${P}:ec2:${R}:*:"
_TAGGED_RESOURCES = [
    _EC2 + "fleet/*", _EC2 + "instance/*", _EC2 + "volume/*",
    _EC2 + "network-interface/*", _EC2 + "launch-template/*", _EC2 + "spot-instances-request/*",
]  # fmt: skip
_IP = "arn:${P}:iam::${A}:instance-profile/*"
_CLUSTER_ARN = "arn:${P}:eks:${R}:${A}:cluster/${C}"

# Official purpose -> statements (Sid -> Action, Resource, Condition), transcribed from the CFN.
EXPECTED_POLICIES: dict[str, dict[str, dict[str, Any]]] = {
    "KarpenterControllerNodeLifecyclePolicy": {
        "AllowScopedEC2InstanceAccessActions": {
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": [
                "arn:${P}:ec2:${R}::image/*",
                "arn:${P}:ec2:${R}::snapshot/*",
                _EC2 + "security-group/*",
                _EC2 + "subnet/*",
                _EC2 + "capacity-reservation/*",
                _EC2 + "placement-group/*",
            ],
        },
        "AllowScopedEC2LaunchTemplateAccessActions": {
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": [_EC2 + "launch-template/*"],
            "Condition": {
                "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${C}": "owned"},
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            },
        },
        "AllowScopedEC2InstanceActionsWithTags": {
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Resource": _TAGGED_RESOURCES,
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/kubernetes.io/cluster/${C}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": "${C}",
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        "AllowScopedResourceCreationTagging": {
            "Action": ["ec2:CreateTags"],
            "Resource": _TAGGED_RESOURCES,
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/kubernetes.io/cluster/${C}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": "${C}",
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"},
            },
        },
        "AllowScopedResourceTagging": {
            "Action": ["ec2:CreateTags"],
            "Resource": [_EC2 + "instance/*"],
            "Condition": {
                "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${C}": "owned"},
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": "${C}"},
                "ForAllValues:StringEquals": {
                    "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                },
            },
        },
        "AllowScopedDeletion": {
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Resource": [_EC2 + "instance/*", _EC2 + "launch-template/*"],
            "Condition": {
                "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/${C}": "owned"},
                "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            },
        },
    },
    "KarpenterControllerIAMIntegrationPolicy": {
        "AllowPassingInstanceRole": {
            "Action": ["iam:PassRole"],
            "Resource": ["${NODE_ROLE_ARN}"],
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        "AllowScopedInstanceProfileCreationActions": {
            "Action": ["iam:CreateInstanceProfile"],
            "Resource": [_IP],
            "Condition": {
                "StringEquals": {
                    "aws:RequestTag/kubernetes.io/cluster/${C}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": "${C}",
                    "aws:RequestTag/topology.kubernetes.io/region": "${R}",
                },
                "StringLike": {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
        "AllowScopedInstanceProfileTagActions": {
            "Action": ["iam:TagInstanceProfile"],
            "Resource": [_IP],
            "Condition": {
                "StringEquals": {
                    "aws:ResourceTag/kubernetes.io/cluster/${C}": "owned",
                    "aws:ResourceTag/topology.kubernetes.io/region": "${R}",
                    "aws:RequestTag/kubernetes.io/cluster/${C}": "owned",
                    "aws:RequestTag/eks:eks-cluster-name": "${C}",
                    "aws:RequestTag/topology.kubernetes.io/region": "${R}",
                },
                "StringLike": {
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            },
        },
        "AllowScopedInstanceProfileActions": {
            "Action": [
                "iam:AddRoleToInstanceProfile",
                "iam:RemoveRoleFromInstanceProfile",
                "iam:DeleteInstanceProfile",
            ],
            "Resource": [_IP],
            "Condition": {
                "StringEquals": {
                    "aws:ResourceTag/kubernetes.io/cluster/${C}": "owned",
                    "aws:ResourceTag/topology.kubernetes.io/region": "${R}",
                },
                "StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            },
        },
    },
    "KarpenterControllerEKSIntegrationPolicy": {
        "AllowAPIServerEndpointDiscovery": {"Action": ["eks:DescribeCluster"], "Resource": [_CLUSTER_ARN]},
    },
    "KarpenterControllerInterruptionPolicy": {
        "AllowInterruptionQueueActions": {
            "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
            "Resource": ["${QUEUE_ARN}"],
        },
    },
    "KarpenterControllerZonalShiftPolicy": {
        "AllowZonalShiftStatusReadOnly": {
            "Action": ["arc-zonal-shift:GetManagedResource"],
            "Resource": ["*"],
            "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": _CLUSTER_ARN}},
        },
    },
    "KarpenterControllerResourceDiscoveryPolicy": {
        "AllowRegionalReadActions": {
            "Action": [
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
            "Resource": ["*"],
            "Condition": {"StringEquals": {"aws:RequestedRegion": "${R}"}},
        },
        "AllowSSMReadActions": {
            "Action": ["ssm:GetParameter"],
            "Resource": ["arn:${P}:ssm:${R}::parameter/aws/service/*"],
        },
        "AllowPricingReadActions": {"Action": ["pricing:GetProducts"], "Resource": ["*"]},
        "AllowUnscopedInstanceProfileListAction": {"Action": ["iam:ListInstanceProfiles"], "Resource": ["*"]},
        "AllowInstanceProfileReadActions": {"Action": ["iam:GetInstanceProfile"], "Resource": [_IP]},
    },
}


def expected_policy(official: str, scope: karpenter_iam.AwsScope, node_role_arn: str, queue_arn: str) -> dict[str, Any]:
    """The official statements of one policy with the placeholders filled in, normalized."""
    text = Template(json.dumps(EXPECTED_POLICIES[official])).substitute(
        P=scope.partition, R=scope.region, A=scope.account_id, C=scope.cluster_name,
        NODE_ROLE_ARN=node_role_arn, QUEUE_ARN=queue_arn,
    )  # fmt: skip
    return {sid: normalize_statement(statement) for sid, statement in json.loads(text).items()}


def _as_sorted_list(value: Any) -> Any:
    return sorted(value) if isinstance(value, list) else [value] if isinstance(value, str) else value


def normalize_statement(statement: dict[str, Any]) -> dict[str, Any]:
    """Order- and string/list-insensitive form of one Allow statement (Sid removed: it is the key)."""
    normalized = {
        "Effect": statement.get("Effect", "Allow"),
        "Action": _as_sorted_list(statement["Action"]),
        "Resource": _as_sorted_list(statement["Resource"]),
    }
    if "Condition" in statement:
        normalized["Condition"] = {
            operator: {key: _as_sorted_list(value) for key, value in keys.items()}
            for operator, keys in statement["Condition"].items()
        }
    return normalized


def statements_by_sid(document: karpenter_iam.PolicyDocument) -> dict[str, dict[str, Any]]:
    sids = [statement["Sid"] for statement in document["Statement"]]
    assert len(sids) == len(set(sids)), f"duplicate Sids: {sids}"
    return {statement["Sid"]: normalize_statement(statement) for statement in document["Statement"]}


# Official EventBridge rules (the five AWS::Events::Rule of that CloudFormation @ v1.14.1): source and detail-type of each.
OFFICIAL_EVENT_RULES = {
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}
