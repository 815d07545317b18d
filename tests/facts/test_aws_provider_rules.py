"""The AWS provider's own input rules (components/facts/aws_rules/table.py, policy/provider_rules.py).

Coverage: every string or number an `aws:*` resource of either shipped plan sets (pulumi-eks's children
included) has a table entry. Probes: `python -m policy.check DIR` rejects a real synth output edited to carry
one value the provider refuses at preview, naming the resource, the field and the rule; and the synth itself
exits 1 on such a value.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.facts.aws_rules.table import rule_for
from components.facts.aws_rules.validators import problems
from offline.plan import Plan
from policy import check
from policy.provider_rules import coverage_gaps, plan_violations, provider_children
from tests.conftest import PROJECT_DIR, run_synth

Edit = Callable[[list[dict[str, Any]]], str]  # edits the plan in place, returns the urn it broke


def _missing_entries(resources: list[dict[str, Any]]) -> set[tuple[str, str]]:
    gaps = {(r["type"], path) for r in resources for path in coverage_gaps(r["type"], r["inputs"])}
    children = provider_children(resources)
    return gaps | {
        (child_type, path) for _, child_type, _, inputs in children for path in coverage_gaps(child_type, inputs)
    }


def test_every_aws_input_of_both_plans_has_a_provider_rule(plans: dict[str, Plan]) -> None:
    missing = set().union(*(_missing_entries(plan.resources) for plan in plans.values()))
    lines = "\n".join(
        f'    ({resource_type!r}, {path!r}): rule("<file> <function>", <checks>) or unconstrained("<file> <function>"),'
        for resource_type, path in sorted(missing)
    )
    assert not missing, (
        "inputs the plans set with no AWS provider rule; add to components/facts/aws_rules/network.py, "
        f"components/facts/aws_rules/ (network.py, platform.py or messaging.py) (transcribed from terraform-provider-aws, cited):\n{lines}"
    )


def test_the_table_covers_pulumi_eks_children(plans: dict[str, Plan]) -> None:
    """The children derived from pulumi-eks's components are checked, not skipped: each kind appears."""
    kinds = {child_type for plan in plans.values() for _, child_type, _, _ in provider_children(plan.resources)}
    assert kinds == {
        "aws:eks/cluster:Cluster",
        "aws:eks/nodeGroup:NodeGroup",
        "aws:eks/addon:Addon",
        "aws:iam/role:Role",
        "aws:ec2/securityGroup:SecurityGroup",
        "aws:ec2/securityGroupRule:SecurityGroupRule",
    }


def test_both_plans_pass_the_provider_rules(plans: dict[str, Plan]) -> None:
    assert {stack: plan_violations(plan.resources) for stack, plan in plans.items()} == {"staging": [], "prod": []}


# --- probes: one refused value in a real synth output -----------------------------------------------------------


def _first(resources: list[dict[str, Any]], type_token: str, name_part: str = "") -> dict[str, Any]:
    return next(r for r in resources if r["type"] == type_token and name_part in r["name"])


def _apostrophe_in(direction: str) -> Edit:
    def edit(resources: list[dict[str, Any]]) -> str:
        group = _first(resources, "aws:ec2/securityGroup:SecurityGroup")
        rules = group["inputs"].get(direction) or [{"fromPort": 0, "protocol": "-1", "toPort": 0}]
        rules[0]["description"] = "NFS from the cluster's nodes"
        group["inputs"][direction] = rules
        return group["urn"]

    return edit


def _long_role_name(resources: list[dict[str, Any]]) -> str:
    role = _first(resources, "aws:iam/role:Role")
    role["inputs"]["name"] = "r" * 65
    return role["urn"]


def _alias_with_space(resources: list[dict[str, Any]]) -> str:
    alias = _first(resources, "aws:kms/alias:Alias")
    alias["inputs"]["name"] = "alias/eks secrets"
    return alias["urn"]


def _queue_name_with_dot(resources: list[dict[str, Any]]) -> str:
    queue = _first(resources, "aws:sqs/queue:Queue")
    queue["inputs"]["name"] = "gpu.platform"
    return queue["urn"]


def _long_tag_value(resources: list[dict[str, Any]]) -> str:
    group = _first(resources, "aws:cloudwatch/logGroup:LogGroup")
    group["inputs"]["tags"]["team"] = "t" * 257
    return group["urn"]


def _long_tag_value_on_the_eks_cluster(resources: list[dict[str, Any]]) -> str:
    cluster = _first(resources, "eks:index:Cluster")
    cluster["inputs"]["tags"]["team"] = "t" * 257
    return cluster["urn"] + " -> aws:eks/cluster:Cluster::"


PROBES: dict[str, tuple[Edit, str, str]] = {
    # probe: (edit, the field the line must name, the rule it must name)
    "apostrophe in an ingress rule description": (_apostrophe_in("ingress"), "ingress[].description", "A-Za-z0-9 "),
    "apostrophe in an egress rule description": (_apostrophe_in("egress"), "egress[].description", "A-Za-z0-9 "),
    "IAM role name over 64 characters": (_long_role_name, "name = 'rrrr", "length 1..64"),
    "KMS alias with a space": (_alias_with_space, "name = 'alias/eks secrets'", "^(alias/)[a-zA-Z0-9/_-]+$"),
    "SQS queue name with a dot": (_queue_name_with_dot, "name = 'gpu.platform'", "[0-9A-Za-z_-]{1,80}"),
    "tag value over 256 characters": (_long_tag_value, "tags.team = 'tttt", "length 0..256"),
    "tag value over 256 characters on a pulumi-eks child": (
        _long_tag_value_on_the_eks_cluster, "tags.team = 'tttt", "length 0..256"
    ),
}  # fmt: skip


def _policy_check(plan_dir: Path) -> tuple[int, str]:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        code = check.main([str(plan_dir)])
    return code, stdout.getvalue()


@pytest.mark.parametrize("probe", PROBES)
def test_policy_check_rejects_a_plan_edited_to_carry(probe: str, staging_plan: Plan, tmp_path: Path) -> None:
    edit, field, broken_rule = PROBES[probe]
    resources = copy.deepcopy(staging_plan.resources)
    urn = edit(resources)
    (tmp_path / "resources.json").write_text(json.dumps(resources), encoding="utf-8")
    code, out = _policy_check(tmp_path)
    lines = [line for line in out.splitlines() if line.startswith("aws-provider-rules")]
    assert code == check.EXIT_VIOLATIONS
    named = [line for line in lines if urn in line]
    assert named and all(field in line and broken_rule in line for line in named), out
    assert all("hashicorp/terraform-provider-aws" in line or "tagging" in line for line in named)
    # Only the edited resource (a pulumi-eks component: each child it passes the value to) is reported.
    assert all(line.split("  ")[1].startswith(urn.split(" -> ")[0]) for line in lines), out


def test_synth_exits_1_naming_a_value_the_provider_refuses(project_copy: Path, tmp_path: Path) -> None:
    """The hub's EFS rule description with an apostrophe again: the plan is written, the run fails."""
    shutil.copy2(PROJECT_DIR / "Pulumi.staging.yaml", project_copy / "Pulumi.staging.yaml")
    hub = project_copy / "components" / "hub.py"
    source = hub.read_text(encoding="utf-8")
    hub.write_text(source.replace("NFS from the node security group", "NFS from the cluster's node security group"))
    try:
        result = run_synth("staging", tmp_path, project=project_copy)
    finally:
        hub.write_text(source, encoding="utf-8")
    assert result.returncode == 1, result.stderr
    assert (tmp_path / "resources.json").is_file()
    rejected = [line for line in result.stderr.splitlines() if "aws-provider-rules" in line]
    assert len(rejected) == 1 and "hubs-efs" in rejected[0] and "ingress[].description" in rejected[0], rejected


def test_pulumi_eks_children_carry_the_inputs_the_program_sets(staging_plan: Plan) -> None:
    cluster = staging_plan.one("eks:index:Cluster", "cluster-eks")["inputs"]
    children = {(kind, name): inputs for _, kind, name, inputs in provider_children(staging_plan.resources)}
    eks_cluster = children[("aws:eks/cluster:Cluster", "cluster-eks-eksCluster")]
    assert eks_cluster["name"] == cluster["name"] and eks_cluster["tags"]["Name"] == "cluster-eks-eksCluster"
    node_sg = children[("aws:ec2/securityGroup:SecurityGroup", "cluster-eks-nodeSecurityGroup")]
    assert node_sg["tags"][f"kubernetes.io/cluster/{cluster['name']}"] == "owned"
    assert node_sg["tags"]["karpenter.sh/discovery"] == cluster["name"]  # nodeSecurityGroupTags
    group = staging_plan.one("eks:index:ManagedNodeGroup", "cluster-system")["inputs"]
    node_group = children[("aws:eks/nodeGroup:NodeGroup", "cluster-system")]
    assert node_group["clusterName"] == cluster["name"] and node_group["nodeGroupName"] == group["nodeGroupName"]
    addons = sorted(inputs["addonName"] for (kind, _), inputs in children.items() if kind == "aws:eks/addon:Addon")
    assert addons == ["kube-proxy", "vpc-cni"]  # coredns is the program's own add-on (corednsAddonOptions.enabled)


# (check, value, accepted): the upstream validators' edges, as terraform-provider-aws decides them.
VALIDATOR_CASES = [
    (_SG_DESCRIPTION := rule_for("aws:ec2/securityGroup:SecurityGroup", "ingress[].description"), "NFS (2049) from nodes: ok", True),
    (_SG_DESCRIPTION, "it's", False),
    (_SG_DESCRIPTION, "a" * 256, False),
    (_ALIAS := rule_for("aws:kms/alias:Alias", "name"), "alias/aws/ebs", False),
    (_ALIAS, "alias/team_a/key-1", True),
    (_ROLE := rule_for("aws:iam/role:Role", "name"), "role+=,.@-_1", True),
    (_ROLE, "role/with/slash", False),
    (_ARN := rule_for("aws:eks/accessEntry:AccessEntry", "principalArn"), "arn:aws:iam::111122223333:role/x", True),
    (_ARN, "arn:aws:iam::1234:role/x", False),
    (_ARN, "arn:aws:iam::111122223333:", False),
    (rule_for("aws:ec2/subnet:Subnet", "cidrBlock"), "10.0.0.1/24", False),
    (rule_for("aws:ec2/vpc:Vpc", "cidrBlock"), "10.0.0.0/8", False),
    (rule_for("aws:eks/cluster:Cluster", "name"), "_cluster", False),
    (rule_for("aws:sqs/queue:Queue", "name"), "alerts.fifo", True),
    (rule_for("aws:cloudwatch/logGroup:LogGroup", "retentionInDays"), 2, False),
    (rule_for("aws:cloudwatch/metricAlarm:MetricAlarm", "metricQueries[].metric.period"), 120, True),
    (rule_for("aws:cloudwatch/metricAlarm:MetricAlarm", "treatMissingData"), "NOTBREACHING", True),
    (rule_for("aws:iam/policy:Policy", "policy"), ' {"Statement": []}', False),
    (rule_for("aws:iam/policy:Policy", "policy"), '{"Statement": [], "Statement": []}', False),
]  # fmt: skip


@pytest.mark.parametrize(("entry", "value", "accepted"), VALIDATOR_CASES)
def test_validators_decide_as_upstream(entry: Any, value: Any, accepted: bool) -> None:
    assert entry is not None
    assert (problems(entry, value) == []) is accepted


def test_tag_keys_follow_the_aws_tagging_rules() -> None:
    tags = rule_for("aws:ec2/vpc:Vpc", "tags.*")
    assert tags is not None
    assert problems(tags, "v", "aws:cloudformation:stack-name") == ["key no reserved aws: prefix"]
    assert problems(tags, "v", "k" * 129) == ["key length 1..128"]
    assert problems(tags, "", "Name") == []
