"""Accepted parliament findings on the IAM documents the program writes, one entry per (issue, scope).

The scope is a statement's Sid (the same Sid in every stack), or `role:<logical name>` for a finding
that only appears when all customer-managed policies attached to one role are analyzed together.
Statements without a Sid are keyed `<logical resource name>.<input>[<index>]`.

Every entry says why the finding is right for this program. `tests/policy/test_security_linters.py` fails
on a finding missing here and on an entry that no longer matches any finding (stale).
"""

from __future__ import annotations

from typing import Final

ALLOWED_FINDINGS: Final[dict[tuple[str, str], str]] = {
    # Karpenter 1.14.1 splits RunInstances/CreateFleet resources across an unconditioned statement (AMIs,
    # snapshots, subnets, security groups) and tag-conditioned ones (what it creates, its launch templates);
    # parliament judges each statement alone, so each half looks incomplete.
    ("RESOURCE_MISMATCH", "AllowScopedEC2InstanceAccessActions"): (
        "unconditioned half of RunInstances/CreateFleet (images, snapshots, subnets, security groups); "
        "the instance/volume/ENI/fleet half is tag-conditioned in AllowScopedEC2InstanceActionsWithTags"
    ),
    ("RESOURCE_MISMATCH", "AllowScopedEC2LaunchTemplateAccessActions"): (
        "launch-template half of RunInstances/CreateFleet, conditioned on this cluster's ownership tag"
    ),
    ("RESOURCE_MISMATCH", "AllowScopedEC2InstanceActionsWithTags"): (
        "created-resource half of RunInstances/CreateFleet, conditioned on the request tags naming this cluster"
    ),
    ("RESOURCE_MISMATCH", "AllowSSMReadActions"): (
        "public SSM parameters (/aws/service/*, AMI aliases) have an empty account field in their ARN; "
        "parliament's format demands one"
    ),
    ("RESOURCE_STAR", "AllowZonalShiftStatusReadOnly"): (
        "arc-zonal-shift:GetManagedResource has no EKS resource type (only ALB/NLB ARNs); upstream scopes it "
        "to this cluster with the arc-zonal-shift:ResourceIdentifier condition instead"
    ),
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "AllowPassingInstanceRole"): (
        "Karpenter must launch nodes with the node role: PassRole of that one role ARN, only to EC2"
    ),
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "AllowScopedInstanceProfileCreationActions"): (
        "Karpenter creates the instance profile for EC2NodeClass.spec.role; request tags pin cluster and region"
    ),
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "AllowScopedInstanceProfileActions"): (
        "add/remove the node role and delete those instance profiles; resource tags pin cluster and region"
    ),
    # Whole-role analysis of the controller: iam:PassRole + ec2:RunInstances is Karpenter's job.
    ("PRIVILEGE_ESCALATION", "role:karpenter-controller"): (
        "CreateEC2WithExistingIP: the controller launches instances with a passed role by design; PassRole is "
        "limited to the Karpenter node role (ec2.amazonaws.com only), which carries only the AWS node policies"
    ),
    # The GPU alarm topic's KMS key policy (components/renderers/observability/observability_config.py). In a key policy the
    # resource is the key itself, and `Resource` must be "*".
    ("RESOURCE_STAR", "AllowAccountToAdministerKey"): (
        "key policy: '*' is this key; the account-root statement is the AWS default key policy, which hands "
        "access control to IAM policies in this account"
    ),
    ("PERMISSIONS_MANAGEMENT_ACTIONS", "AllowAccountToAdministerKey"): (
        "key policy: the account (not a principal in it) administers its own key, as the AWS default key policy"
    ),
    ("RESOURCE_STAR", "AllowCloudWatchForCMK"): (
        "key policy: '*' is this key; CloudWatch may use it to publish to the encrypted topic (AWS's documented "
        "statement, no condition); the topic policy admits only this cluster's alarms of this account"
    ),
}
