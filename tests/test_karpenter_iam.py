"""Karpenter IAM renderers against the official Karpenter 1.14.1 statements, and linted by parliament.

EXPECTED_POLICIES transcribes the six `AWS::IAM::ManagedPolicy` documents of the getting-started
CloudFormation (aws/karpenter-provider-aws, website/content/en/docs/getting-started/
getting-started-with-karpenter/cloudformation.yaml @ v1.14.1) with its placeholders: ${P} partition, ${R} region,
${A} account, ${C} ClusterName, ${NODE_ROLE_ARN} = KarpenterNodeRole.Arn, ${QUEUE_ARN} =
KarpenterInterruptionQueue.Arn. Differences from the CloudFormation, all presentational:
- our documents always write Action/Resource as lists (CFN mixes strings and lists; IAM treats them alike),
  so both sides are normalized to sorted lists before comparing;
- our policy names are f"{cluster}-karpenter-<purpose>" (CFN: KarpenterController<Name>Policy-${C}).
The controller role trust is not in the CFN (it uses IRSA/eksctl); it follows the EKS Pod Identity docs.
"""

from __future__ import annotations

import json
from pathlib import Path
from string import Template
from typing import Any

import parliament
import pytest
from parliament.cli import is_finding_filtered

from components.constants import KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT
from components.renderers import karpenter_iam
from components.settings import CLUSTER_NAME_MAX

SCOPE = karpenter_iam.AwsScope(partition="aws", region="us-west-1", account_id="000000000000", cluster_name="lab")
NODE_ROLE_ARN = "arn:aws:iam::000000000000:role/lab-karpenter-node"
QUEUE_ARN = "arn:aws:sqs:us-west-1:000000000000:lab"

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


def rendered_policies(
    scope: karpenter_iam.AwsScope, node_role_arn: str, queue_arn: str
) -> dict[str, karpenter_iam.PolicyDocument]:
    """Our six documents keyed by the official policy name."""
    by_purpose = {
        "node-lifecycle": karpenter_iam.node_lifecycle_policy(scope),
        "iam-integration": karpenter_iam.iam_integration_policy(scope, node_role_arn),
        "eks-integration": karpenter_iam.eks_integration_policy(scope),
        "interruption": karpenter_iam.interruption_policy(queue_arn),
        "zonal-shift": karpenter_iam.zonal_shift_policy(scope),
        "resource-discovery": karpenter_iam.resource_discovery_policy(scope),
    }
    assert set(by_purpose) == set(karpenter_iam.CONTROLLER_POLICY_PURPOSES)
    return {
        f"KarpenterController{karpenter_iam.CONTROLLER_POLICY_PURPOSES[purpose]}Policy": document
        for purpose, document in by_purpose.items()
    }


def statements_by_sid(document: karpenter_iam.PolicyDocument) -> dict[str, dict[str, Any]]:
    sids = [statement["Sid"] for statement in document["Statement"]]
    assert len(sids) == len(set(sids)), f"duplicate Sids: {sids}"
    return {statement["Sid"]: normalize_statement(statement) for statement in document["Statement"]}


@pytest.mark.parametrize("official", sorted(EXPECTED_POLICIES))
def test_controller_policy_matches_official_statements(official: str) -> None:
    document = rendered_policies(SCOPE, NODE_ROLE_ARN, QUEUE_ARN)[official]
    assert document["Version"] == "2012-10-17"
    assert statements_by_sid(document) == expected_policy(official, SCOPE, NODE_ROLE_ARN, QUEUE_ARN)


def test_the_six_official_policies_are_rendered() -> None:
    assert set(rendered_policies(SCOPE, NODE_ROLE_ARN, QUEUE_ARN)) == set(EXPECTED_POLICIES)
    assert len(EXPECTED_POLICIES) == 6


def test_policies_follow_partition_region_account_and_cluster() -> None:
    other = karpenter_iam.AwsScope(partition="aws-cn", region="cn-north-1", account_id="111122223333", cluster_name="x")
    node_role = "arn:aws-cn:iam::111122223333:role/x-karpenter-node"
    queue = "arn:aws-cn:sqs:cn-north-1:111122223333:x"
    for official, document in rendered_policies(other, node_role, queue).items():
        assert statements_by_sid(document) == expected_policy(official, other, node_role, queue)
        assert "lab" not in json.dumps(document) and "us-west-1" not in json.dumps(document)


def test_every_mutating_statement_is_scoped_to_this_cluster() -> None:
    """Everything that creates, tags, passes or deletes names this cluster in a condition or its resource."""
    for official, document in rendered_policies(SCOPE, NODE_ROLE_ARN, QUEUE_ARN).items():
        for statement in document["Statement"]:
            mutating = any(
                action.split(":")[1].startswith(
                    ("Create", "Run", "Terminate", "Delete", "Tag", "Add", "Remove", "Pass")
                )
                for action in statement["Action"]
            )
            if mutating and statement["Sid"] != "AllowScopedEC2InstanceAccessActions":
                scoped_text = json.dumps([statement.get("Condition"), statement["Resource"]])
                assert "lab" in scoped_text, f"{official}/{statement['Sid']} is not scoped to the cluster"


# --- trust, queue and rules -------------------------------------------------------------------------------


def test_controller_trust_is_pod_identity_for_the_karpenter_service_account() -> None:
    (statement,) = karpenter_iam.controller_trust_policy("lab")["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-name": "lab",
            "aws:RequestTag/kubernetes-namespace": KARPENTER_NAMESPACE,
            "aws:RequestTag/kubernetes-service-account": KARPENTER_SERVICE_ACCOUNT,
        }
    }


def test_interruption_queue_policy_matches_official_document() -> None:
    assert karpenter_iam.interruption_queue_policy(QUEUE_ARN) == {
        "Version": "2012-10-17",
        "Id": "EC2InterruptionPolicy",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": QUEUE_ARN,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": QUEUE_ARN,
                "Condition": {"Bool": {"aws:SecureTransport": False}},
            },
        ],
    }


# Official EventBridge rules (the five AWS::Events::Rule of that CloudFormation @ v1.14.1): source and detail-type of each.
OFFICIAL_EVENT_RULES = {
    ("aws.health", "AWS Health Event"),
    ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("aws.ec2", "EC2 Instance State-change Notification"),
    ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}


def test_the_five_official_event_rules() -> None:
    patterns = [karpenter_iam.interruption_event_pattern(p) for p in karpenter_iam.INTERRUPTION_EVENTS]
    assert {(p["source"][0], p["detail-type"][0]) for p in patterns} == OFFICIAL_EVENT_RULES
    assert all(len(p["source"]) == 1 and len(p["detail-type"]) == 1 for p in patterns)


def test_physical_names_fit_aws_limits_for_the_longest_cluster_name() -> None:
    longest = "c" * CLUSTER_NAME_MAX
    rule_names = [f"{longest}-karpenter-{purpose}" for purpose in karpenter_iam.INTERRUPTION_EVENTS]
    assert max(len(name) for name in rule_names) <= 64  # EventBridge rule names
    policy_names = [f"{longest}-karpenter-{purpose}" for purpose in karpenter_iam.CONTROLLER_POLICY_PURPOSES]
    assert max(len(name) for name in policy_names) <= 128  # IAM policy names
    assert len(f"{longest}-karpenter-controller") <= 64  # IAM role names
    assert len(longest) <= 80  # SQS queue names


# --- parliament ---------------------------------------------------------------------------------------------

# (policy, Sid, issue) -> why the finding is accepted. Parliament checks one statement at a time; Karpenter
# deliberately splits RunInstances/CreateFleet resources across a tag-conditioned and an unconditioned
# statement, so each half looks incomplete alone.
PARLIAMENT_ALLOWED = {
    ("KarpenterControllerNodeLifecyclePolicy", "AllowScopedEC2InstanceAccessActions", "RESOURCE_MISMATCH"):
        "images/snapshots/subnets/SGs half of RunInstances; instance/volume/ENI half is tag-conditioned below",
    ("KarpenterControllerNodeLifecyclePolicy", "AllowScopedEC2LaunchTemplateAccessActions", "RESOURCE_MISMATCH"):
        "launch-template half of RunInstances/CreateFleet, conditioned on the cluster's tags",
    ("KarpenterControllerNodeLifecyclePolicy", "AllowScopedEC2InstanceActionsWithTags", "RESOURCE_MISMATCH"):
        "created-resource half of RunInstances/CreateFleet, conditioned on the request tags",
    ("KarpenterControllerIAMIntegrationPolicy", "AllowPassingInstanceRole", "PERMISSIONS_MANAGEMENT_ACTIONS"):
        "PassRole of the one node role, only to EC2: Karpenter must launch nodes with it",
    ("KarpenterControllerIAMIntegrationPolicy", "AllowScopedInstanceProfileCreationActions", "PERMISSIONS_MANAGEMENT_ACTIONS"):
        "Karpenter manages instance profiles for EC2NodeClass.spec.role; tag-scoped to this cluster and region",
    ("KarpenterControllerIAMIntegrationPolicy", "AllowScopedInstanceProfileActions", "PERMISSIONS_MANAGEMENT_ACTIONS"):
        "same instance profiles; tag-scoped to this cluster and region",
    ("KarpenterControllerZonalShiftPolicy", "AllowZonalShiftStatusReadOnly", "RESOURCE_STAR"):
        "GetManagedResource has no resource ARN; scoped by arc-zonal-shift:ResourceIdentifier instead",
    ("KarpenterControllerResourceDiscoveryPolicy", "AllowSSMReadActions", "RESOURCE_MISMATCH"):
        "public SSM parameters have an empty account in their ARN; parliament expects one",
}  # fmt: skip


@pytest.fixture(scope="module")
def parliament_configured() -> None:
    package_dir = Path(parliament.__file__).parent
    parliament.override_config(str(package_dir / "community_auditors" / "config_override.yaml"))


def _findings(document: dict[str, Any]) -> list[Any]:
    policy = parliament.analyze_policy_string(json.dumps(document), include_community_auditors=True)
    # Severity LOW and above: a typo'd action is only LOW (UNKNOWN_ACTION).
    return [f for f in map(parliament.enhance_finding, policy.findings) if not is_finding_filtered(f, "LOW")]


@pytest.mark.usefixtures("parliament_configured")
def test_controller_policies_pass_parliament_per_statement() -> None:
    unexpected, seen = [], set()
    for official, document in rendered_policies(SCOPE, NODE_ROLE_ARN, QUEUE_ARN).items():
        for statement in document["Statement"]:
            for finding in _findings({"Version": document["Version"], "Statement": [statement]}):
                key = (official, statement["Sid"], finding.issue)
                seen.add(key)
                if key not in PARLIAMENT_ALLOWED:
                    unexpected.append(f"{key}: {finding.severity} {finding.detail}")
    assert unexpected == []
    assert set(PARLIAMENT_ALLOWED) <= seen, f"stale allow-list entries: {set(PARLIAMENT_ALLOWED) - seen}"


@pytest.mark.usefixtures("parliament_configured")
def test_queue_policy_passes_parliament() -> None:
    assert _findings(karpenter_iam.interruption_queue_policy(QUEUE_ARN)) == []


@pytest.mark.usefixtures("parliament_configured")
def test_parliament_catches_a_typo_in_our_documents() -> None:
    document = karpenter_iam.interruption_policy(QUEUE_ARN)
    document["Statement"][0]["Action"] = ["sqs:RecieveMessage"]
    assert "UNKNOWN_ACTION" in {f.issue for f in _findings(document)}


def test_documents_are_plain_json() -> None:
    """No tuples, sets or other types that would change shape on the way to AWS."""
    for document in rendered_policies(SCOPE, NODE_ROLE_ARN, QUEUE_ARN).values():
        assert json.loads(json.dumps(document)) == document
