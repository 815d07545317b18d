"""Karpenter IAM renderers against the official Karpenter 1.14.1 statements, and linted by parliament.

The official statements (EXPECTED_POLICIES) and how both sides are normalized are in
tests/support/karpenter_iam_reference.py. The controller role trust is not in the CloudFormation (it uses
IRSA/eksctl); it follows the EKS Pod Identity docs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import parliament
import pytest
from parliament.cli import is_finding_filtered

from components.facts.constants import KARPENTER_NAMESPACE, KARPENTER_SERVICE_ACCOUNT
from components.renderers.karpenter import karpenter_iam, karpenter_interruption
from components.settings import CLUSTER_NAME_MAX
from tests.support.karpenter_iam_reference import (
    EXPECTED_POLICIES,
    OFFICIAL_EVENT_RULES,
    expected_policy,
    statements_by_sid,
)

SCOPE = karpenter_iam.AwsScope(partition="aws", region="us-west-1", account_id="000000000000", cluster_name="lab")
NODE_ROLE_ARN = "arn:aws:iam::000000000000:role/lab-karpenter-node"
QUEUE_ARN = "arn:aws:sqs:us-west-1:000000000000:lab"


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
    assert karpenter_interruption.interruption_queue_policy(QUEUE_ARN) == {
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


def test_the_five_official_event_rules() -> None:
    patterns = [
        karpenter_interruption.interruption_event_pattern(p) for p in karpenter_interruption.INTERRUPTION_EVENTS
    ]
    assert {(p["source"][0], p["detail-type"][0]) for p in patterns} == OFFICIAL_EVENT_RULES
    assert all(len(p["source"]) == 1 and len(p["detail-type"]) == 1 for p in patterns)


def test_physical_names_fit_aws_limits_for_the_longest_cluster_name() -> None:
    longest = "c" * CLUSTER_NAME_MAX
    rule_names = [f"{longest}-karpenter-{purpose}" for purpose in karpenter_interruption.INTERRUPTION_EVENTS]
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
    assert _findings(karpenter_interruption.interruption_queue_policy(QUEUE_ARN)) == []


@pytest.mark.usefixtures("parliament_configured")
def test_parliament_catches_a_typo_in_our_documents() -> None:
    document = karpenter_iam.interruption_policy(QUEUE_ARN)
    document["Statement"][0]["Action"] = ["sqs:RecieveMessage"]
    assert "UNKNOWN_ACTION" in {f.issue for f in _findings(document)}


def test_documents_are_plain_json() -> None:
    """No tuples, sets or other types that would change shape on the way to AWS."""
    for document in rendered_policies(SCOPE, NODE_ROLE_ARN, QUEUE_ARN).values():
        assert json.loads(json.dumps(document)) == document
