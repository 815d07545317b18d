"""`python -m offline.diff OLD NEW`: added/removed/changed resources and physical-identity collisions.

Constructed plans cover every identity kind (one resource removed under one URN and added under another,
or claimed twice); real synth pairs are compared in tests/access/test_access.py (a principal moved between roles)
and here (the shipped staging plan against itself and against a renamed resource).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from offline.diff import IDENTITIES, diff_plans, render
from offline.plan import Plan
from tests.conftest import PROJECT_DIR

STACK_PREFIX = "urn:pulumi:staging::gpu-platform::"
ADMIN = "arn:aws:iam::111122223333:role/platform-admin"


def _resource(type_: str, name: str, inputs: dict[str, Any], chain: str = "", **extra: Any) -> dict[str, Any]:
    full_type = f"{chain}${type_}" if chain else type_
    return {
        "urn": f"{STACK_PREFIX}{full_type}::{name}",
        "type": type_,
        "name": name,
        "parent": None,
        "dependencies": [],
        "protect": False,
        "custom": True,
        "inputs": inputs,
        **extra,
    }


# One resource per identity kind the issue lists (and the few more offline.diff knows), with the inputs that
# carry its physical identity.
IDENTITY_CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "access entry": ("aws:eks/accessEntry:AccessEntry", {"principalArn": ADMIN, "type": "STANDARD"}),
    "access policy association": (
        "aws:eks/accessPolicyAssociation:AccessPolicyAssociation",
        {"principalArn": ADMIN, "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"},
    ),
    "IAM role": ("aws:iam/role:Role", {"name": "nextgen-learninglab-karpenter-controller"}),
    "IAM policy": ("aws:iam/policy:Policy", {"name": "nextgen-learninglab-karpenter"}),
    "EKS add-on": ("aws:eks/addon:Addon", {"clusterName": "nextgen-learninglab", "addonName": "coredns"}),
    "SQS queue": ("aws:sqs/queue:Queue", {"name": "nextgen-learninglab-interruptions"}),
    "EventBridge rule": ("aws:cloudwatch/eventRule:EventRule", {"name": "nextgen-learninglab-spot-interruption"}),
    "KMS alias": ("aws:kms/alias:Alias", {"name": "alias/nextgen-learninglab-eks-secrets"}),
    "launch template": ("aws:ec2/launchTemplate:LaunchTemplate", {"name": "nextgen-learninglab-system"}),
    "CloudWatch dashboard": ("aws:cloudwatch/dashboard:Dashboard", {"dashboardName": "nextgen-learninglab-gpu-fleet"}),
    "CloudWatch alarm": ("aws:cloudwatch/metricAlarm:MetricAlarm", {"name": "nextgen-learninglab-idle-gpu"}),
    "CloudWatch log group": ("aws:cloudwatch/logGroup:LogGroup", {"name": "/aws/eks/nextgen-learninglab/cluster"}),
    "SNS topic": ("aws:sns/topic:Topic", {"name": "nextgen-learninglab-gpu-alarms"}),
    "EKS node group": ("eks:index:ManagedNodeGroup", {"nodeGroupName": "nextgen-learninglab-system"}),
    "Kubernetes object": (
        "kubernetes:core/v1:ConfigMap",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "plugin-config", "namespace": "kube-system"}},
    ),
    "Helm release": ("kubernetes:helm.sh/v3:Release", {"name": "karpenter", "namespace": "kube-system"}),
}


def test_every_listed_identity_kind_has_a_case() -> None:
    assert set(IDENTITIES) <= {type_ for type_, _ in IDENTITY_CASES.values()}


@pytest.mark.parametrize("kind", sorted(IDENTITY_CASES))
def test_removed_under_one_urn_and_added_under_another_collides(kind: str) -> None:
    type_, inputs = IDENTITY_CASES[kind]
    old = [_resource(type_, "old-name", inputs)]
    new = [_resource(type_, "new-name", inputs)]
    diff = diff_plans(old, new)
    (collision,) = diff.collisions
    assert (collision.removed_urn, collision.added_urn) == (old[0]["urn"], new[0]["urn"])
    text = render(diff, "old", "new")
    assert old[0]["urn"] in text and new[0]["urn"] in text and collision.identity[1] in text


@pytest.mark.parametrize("kind", sorted(IDENTITY_CASES))
def test_added_twice_collides(kind: str) -> None:
    type_, inputs = IDENTITY_CASES[kind]
    new = [_resource(type_, "one", inputs), _resource(type_, "two", inputs)]
    (collision,) = diff_plans([], new).collisions
    assert collision.removed_urn is None
    assert {collision.added_urn, collision.other_new_urn} == {r["urn"] for r in new}


@pytest.mark.parametrize("kind", sorted(IDENTITY_CASES))
def test_a_renamed_resource_with_an_alias_does_not_collide(kind: str) -> None:
    type_, inputs = IDENTITY_CASES[kind]
    old = [_resource(type_, "old-name", inputs)]
    new = [_resource(type_, "new-name", inputs, aliases=[old[0]["urn"]])]
    diff = diff_plans(old, new)
    assert (diff.collisions, diff.added, diff.removed) == ([], [], [])
    (change,) = diff.changed
    assert change.former_urn == old[0]["urn"] and change.inputs == ()


def test_an_auto_named_or_unknown_identity_never_collides() -> None:
    old = [_resource("aws:iam/role:Role", "a", {"namePrefix": "x-"})]
    new = [
        _resource("aws:iam/role:Role", "b", {"namePrefix": "x-"}),
        _resource("aws:iam/role:Role", "c", {"name": "[unknown]"}),
    ]
    assert diff_plans(old, new).collisions == []


def test_the_old_admin_entry_inside_pulumi_eks_moved_to_a_lab_collides() -> None:
    """Issue 17, defect 3 on the code before round 3: the admin entry was a hidden child of eks.Cluster
    (`accessEntries`), the lab member's a top-level resource: the move creates before it deletes (409)."""
    cluster = _resource(
        "eks:index:Cluster",
        "cluster-eks",
        {"name": "nextgen-learninglab", "accessEntries": {"role-platform-admin-ee1753e4": {"principalArn": ADMIN}}},
        chain="gpu-platform:cluster:Cluster",
    )
    lab_entry = _resource(
        "aws:eks/accessEntry:AccessEntry",
        "labs-member-role-platform-admin-ee1753e4",
        {"principalArn": ADMIN, "clusterName": "nextgen-learninglab"},
        chain="gpu-platform:labs:Labs",
    )
    without_admins = {**cluster, "inputs": {"name": "nextgen-learninglab"}}
    (collision,) = diff_plans([cluster], [without_admins, lab_entry]).collisions
    assert collision.identity == ("EKS access entry principal", ADMIN)
    assert collision.removed_urn is not None and collision.removed_urn.endswith(
        "gpu-platform:cluster:Cluster$eks:index:Cluster$aws:eks/accessEntry:AccessEntry::cluster-eks-role-platform-admin-ee1753e4"
    )
    assert collision.added_urn == lab_entry["urn"]


def test_changed_inputs_are_named() -> None:
    old = [_resource("aws:sqs/queue:Queue", "q", {"name": "q", "messageRetentionSeconds": 300})]
    new = [_resource("aws:sqs/queue:Queue", "q", {"name": "q", "messageRetentionSeconds": 600})]
    diff = diff_plans(old, new)
    assert [(c.urn, c.inputs) for c in diff.changed] == [(old[0]["urn"], ("messageRetentionSeconds",))]
    assert "messageRetentionSeconds" in render(diff, "old", "new")


# --- the command on real synth outputs ------------------------------------------------------------------------------


def _diff(old: Path, new: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "offline.diff", str(old), str(new)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_on_a_real_plan(staging_plan: Plan, tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    staging_plan.write(old)
    staging_plan.write(new)
    same = _diff(old, new)
    assert same.returncode == 0 and "0 added, 0 removed, 0 changed, **0 collision(s)**" in same.stdout
    # Rename the interruption queue's logical name in the new plan: same queue name under another URN.
    resources = json.loads((new / "resources.json").read_text(encoding="utf-8"))
    (queue,) = [r for r in resources if r["type"] == "aws:sqs/queue:Queue"]
    old_urn = queue["urn"]
    queue["urn"] = old_urn.replace(f"::{queue['name']}", f"::{queue['name']}-renamed")
    (new / "resources.json").write_text(json.dumps(resources), encoding="utf-8")
    renamed = _diff(old, new)
    assert renamed.returncode == 1, renamed.stdout
    assert old_urn in renamed.stdout and queue["urn"] in renamed.stdout and "SQS queue name" in renamed.stdout
    missing = _diff(tmp_path / "nothing", new)
    assert missing.returncode == 2 and "synth.py" in missing.stderr
