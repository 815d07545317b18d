"""The policy pack: its pure rules against every resource of every stack's plan and against broken
variants of them, and the pack itself served over gRPC exactly as `pulumi preview --policy-pack` runs it.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import analyzer_pb2, analyzer_pb2_grpc
from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UNKNOWN_OBJECT_VALUE

from components.facts.constants import GPU_TAINT, GPU_TAINT_EFFECT_EKS, GPU_TAINT_KEY
from offline.plan import Plan
from policy import rules
from policy.pack import PACK_NAME, policies
from tests.conftest import PROJECT_DIR, STACKS

RULES_BY_NAME = {rule.name: rule for rule in rules.RULES}


# The shipped stack files hold documentation values on purpose (tests/facts/test_placeholders.py checks that
# exactly those are reported); every other rule passes on every resource.
PLACEHOLDER_RULE = "no-documentation-placeholders"


@pytest.mark.parametrize("stack", STACKS)
def test_every_resource_of_the_plan_passes(plans: dict[str, Plan], stack: str) -> None:
    found = {
        f"{r['type']} {r['name']}": problems
        for r in plans[stack].resources
        if (problems := {k: v for k, v in rules.violations(r["type"], r["inputs"]).items() if k != PLACEHOLDER_RULE})
    }
    assert found == {}


def test_every_rule_inspects_resources_of_the_plans(plans: dict[str, Plan]) -> None:
    """No rule passes vacuously: each covers resource types the program really registers."""
    types = {r["type"] for plan in plans.values() for r in plan.resources}
    for rule in rules.RULES:
        assert set(rule.resource_types) & types, f"{rule.name}: none of {rule.resource_types} in the plans"


# --- broken variants of the plan's own resources -------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]


def _first(plans: dict[str, Plan], type_token: str) -> dict[str, Any]:
    resources = [r for plan in plans.values() for r in plan.of_type(type_token)]
    assert resources, f"no {type_token} in the plans"
    return copy.deepcopy(resources[0]["inputs"])


def _gpu_node_group(plan: Plan) -> dict[str, Any]:
    groups = plan.of_type(rules.MANAGED_NODE_GROUP)
    gpu = [r for r in groups if "NVIDIA" in r["inputs"].get("amiType", "")]
    assert gpu, "no GPU managed node group in the plan"
    return copy.deepcopy(gpu[0]["inputs"])


def _set(path: str, value: Any) -> Mutation:
    """Set a dotted path (`a.b[0].c`) in props; `value` None deletes the key."""

    def mutate(props: dict[str, Any]) -> None:
        *parents, last = path.replace("[", ".").replace("]", "").split(".")
        target: Any = props
        for part in parents:
            target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
        if value is None:
            target.pop(last, None)
        else:
            target[int(last) if last.isdigit() else last] = value

    return mutate


def _statement(props: dict[str, Any], **changes: Any) -> None:
    document = json.loads(props["policy"])
    document["Statement"][0].update(changes)
    props["policy"] = json.dumps(document)


# (case id, rule, resource type, mutation of the first such resource in the plans, message fragment)
BROKEN_PLAN_RESOURCES: list[tuple[str, str, str, Mutation, str]] = [
    ("lt-imdsv1", "imdsv2-required", rules.LAUNCH_TEMPLATE, _set("metadataOptions.httpTokens", "optional"), "'required'"),
    ("lt-no-metadata-options", "imdsv2-required", rules.LAUNCH_TEMPLATE, _set("metadataOptions", None), "IMDSv2"),
    ("lt-hop-limit-2", "imdsv2-required", rules.LAUNCH_TEMPLATE, _set("metadataOptions.httpPutResponseHopLimit", 2), "must be 1"),
    ("nodeclass-imdsv1", "imdsv2-required", rules.EC2_NODE_CLASS, _set("spec.metadataOptions.httpTokens", "optional"), "'required'"),
    ("lt-unencrypted-root", "encryption-at-rest", rules.LAUNCH_TEMPLATE, _set("blockDeviceMappings[0].ebs.encrypted", "false"), "encrypted must be true"),
    ("lt-no-block-devices", "encryption-at-rest", rules.LAUNCH_TEMPLATE, _set("blockDeviceMappings", None), "declare the root EBS volume"),
    ("nodeclass-unencrypted", "encryption-at-rest", rules.EC2_NODE_CLASS, _set("spec.blockDeviceMappings[0].ebs.encrypted", False), "encrypted must be true"),
    ("cluster-no-kms", "encryption-at-rest", rules.EKS_CLUSTER_COMPONENT, _set("encryptionConfigKeyArn", None), "KMS"),
    ("queue-no-sse", "encryption-at-rest", "aws:sqs/queue:Queue", _set("sqsManagedSseEnabled", False), "server-side encryption"),
    ("daemonset-latest", "pinned-versions", "kubernetes:apps/v1:DaemonSet", _set("spec.template.spec.containers[0].image", "nvcr.io/nvidia/k8s-device-plugin:latest"), "':latest'"),
    ("daemonset-untagged", "pinned-versions", "kubernetes:apps/v1:DaemonSet", _set("spec.template.spec.containers[0].image", "nvcr.io/nvidia/k8s-device-plugin"), "no tag"),
    ("chart-range", "pinned-versions", "kubernetes:helm.sh/v4:Chart", _set("version", "^1.14"), "not an exact version"),
    ("chart-unversioned", "pinned-versions", "kubernetes:helm.sh/v4:Chart", _set("version", None), "not an exact version"),
    ("nodeclass-ami-latest", "pinned-versions", rules.EC2_NODE_CLASS, _set("spec.amiSelectorTerms", [{"alias": "al2023@latest"}]), "pin an AMI release"),
    ("nodepool-untainted", "gpu-nodes-tainted", rules.NODE_POOL, _set("spec.template.spec.taints", []), GPU_TAINT_KEY),
    ("nodepool-wrong-effect", "gpu-nodes-tainted", rules.NODE_POOL, _set("spec.template.spec.taints", [{**GPU_TAINT, "effect": "PreferNoSchedule"}]), GPU_TAINT_KEY),
    ("policy-star", "no-wildcard-iam-actions", "aws:iam/policy:Policy", lambda p: _statement(p, Action="*"), "wildcard"),
    ("policy-service-star", "no-wildcard-iam-actions", "aws:iam/policy:Policy", lambda p: _statement(p, Action=["ec2:*"]), "wildcard"),
    ("policy-write-prefix", "no-wildcard-iam-actions", "aws:iam/policy:Policy", lambda p: _statement(p, Action=["iam:Put*"]), "wildcard"),
    ("policy-not-action", "no-wildcard-iam-actions", "aws:iam/policy:Policy", lambda p: _statement(p, NotAction=["iam:*"]), "NotAction"),
    ("topic-policy-service-star", "no-wildcard-iam-actions", "aws:sns/topicPolicy:TopicPolicy", lambda p: _statement(p, Action="sns:*"), "wildcard"),
    ("queue-policy-service-star", "no-wildcard-iam-actions", "aws:sqs/queuePolicy:QueuePolicy", lambda p: _statement(p, Action="sqs:*"), "wildcard"),
    ("policy-example-account", PLACEHOLDER_RULE, "aws:iam/policy:Policy", lambda p: _statement(p, Resource="arn:aws:iam::123456789012:role/x"), "123456789012"),
    ("lt-documentation-tag", PLACEHOLDER_RULE, rules.LAUNCH_TEMPLATE, _set("tags.egress", "192.0.2.10/32"), "192.0.2.10/32"),
    ("sg-rule-apostrophe", "aws-provider-rules", "aws:ec2/securityGroup:SecurityGroup", _set("ingress[0].description", "it's NFS"), "validSecurityGroupRuleDescription"),
    ("queue-name-dot", "aws-provider-rules", "aws:sqs/queue:Queue", _set("name", "a.b"), "resourceQueueCustomizeDiff"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "resource_type", "mutate", "fragment"),
    [pytest.param(*case[1:], id=case[0]) for case in BROKEN_PLAN_RESOURCES],
)
def test_each_rule_catches_a_broken_plan_resource(
    plans: dict[str, Plan], rule: str, resource_type: str, mutate: Mutation, fragment: str
) -> None:
    props = _first(plans, resource_type)
    assert RULES_BY_NAME[rule].check(resource_type, props) == []  # the plan's own resource is fine
    mutate(props)
    found = rules.violations(resource_type, props)
    assert rule in found and any(fragment in message for message in found[rule]), found


def _alarm_topic_key(plans: dict[str, Plan]) -> dict[str, Any]:
    (key,) = [r for r in plans["staging"].of_type(rules.KMS_KEY) if r["inputs"].get("policy")]
    return copy.deepcopy(key["inputs"])


def _key_statement(props: dict[str, Any], sid: str, **changes: Any) -> None:
    document = json.loads(props["policy"])
    next(s for s in document["Statement"] if s["Sid"] == sid).update(changes)
    props["policy"] = json.dumps(document)


@pytest.mark.parametrize(
    ("sid", "changes"),
    [
        pytest.param("AllowCloudWatchForCMK", {"Action": "kms:*"}, id="service-gets-kms-star"),
        pytest.param("AllowCloudWatchForCMK", {"Action": ["kms:Decrypt", "kms:GenerateDataKey*"]}, id="data-key-prefix"),
        pytest.param("AllowAccountToAdministerKey", {"Principal": {"AWS": "*"}}, id="kms-star-for-anyone"),
        pytest.param("AllowAccountToAdministerKey", {"Principal": {"Service": "cloudwatch.amazonaws.com"}}, id="kms-star-for-a-service"),
        pytest.param("AllowAccountToAdministerKey", {"Resource": "arn:aws:kms:us-west-1:210987654321:key/*"}, id="kms-star-beyond-this-key"),
    ],
)  # fmt: skip
def test_key_policy_wildcards_are_caught(plans: dict[str, Plan], sid: str, changes: dict[str, Any]) -> None:
    props = _alarm_topic_key(plans)
    # The plan's own key policy passes: kms:* for the account root is the KMS default key policy statement.
    assert rules.no_wildcard_iam_actions(rules.KMS_KEY, props) == []
    _key_statement(props, sid, **changes)
    found = rules.violations(rules.KMS_KEY, props)
    assert any(sid in message and "wildcard" in message for message in found["no-wildcard-iam-actions"]), found


def test_gpu_node_group_without_the_taint_is_caught(managed_group_plan: Plan) -> None:
    props = _gpu_node_group(managed_group_plan)
    assert rules.gpu_nodes_tainted(rules.MANAGED_NODE_GROUP, props) == []
    props["taints"] = [t for t in props["taints"] if t["key"] != GPU_TAINT_KEY]
    assert rules.gpu_nodes_tainted(rules.MANAGED_NODE_GROUP, props)
    # The EKS API spelling of the effect is required (NO_SCHEDULE, not NoSchedule).
    props["taints"] = [{**GPU_TAINT, "effect": GPU_TAINT["effect"]}]
    assert GPU_TAINT["effect"] != GPU_TAINT_EFFECT_EKS and rules.gpu_nodes_tainted(rules.MANAGED_NODE_GROUP, props)


def test_gpu_node_group_is_recognised_by_instance_type_alone(managed_group_plan: Plan) -> None:
    """A custom AMI (no amiType) on GPU instances is still a GPU node group."""
    props = _gpu_node_group(managed_group_plan)
    props.pop("amiType")
    props["taints"] = []
    assert rules.gpu_nodes_tainted(rules.MANAGED_NODE_GROUP, props)


# --- resource types the plan only holds inside remote components (pulumi-eks children) ------------------------

BROKEN_HIDDEN_RESOURCES: list[tuple[str, str, str, dict[str, Any], str]] = [
    ("nodegroup-without-launch-template", "imdsv2-required", rules.EKS_NODE_GROUP, {"amiType": "AL2023_x86_64_STANDARD"}, "launchTemplate"),
    ("mng-without-lt-or-imdsv2", "imdsv2-required", rules.MANAGED_NODE_GROUP, {"amiType": "AL2023_x86_64_STANDARD"}, "enableIMDSv2"),
    ("aws-cluster-no-secrets-encryption", "encryption-at-rest", rules.EKS_CLUSTER, {"name": "c"}, "secrets"),
    ("ebs-volume-unencrypted", "encryption-at-rest", rules.EBS_VOLUME, {"size": 10}, "encrypted"),
    ("aws-nodegroup-gpu-untainted", "gpu-nodes-tainted", rules.EKS_NODE_GROUP, {"amiType": "AL2023_x86_64_NVIDIA", "launchTemplate": {"id": "lt"}}, GPU_TAINT_KEY),
    ("role-inline-star", "no-wildcard-iam-actions", "aws:iam/role:Role", {"inlinePolicies": [{"name": "x", "policy": '{"Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'}]}, "inlinePolicies[0].policy"),
    ("cronjob-latest", "pinned-versions", "kubernetes:batch/v1:CronJob", {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:latest"}]}}}}}}, "':latest'"),
    ("pod-init-untagged", "pinned-versions", "kubernetes:core/v1:Pod", {"spec": {"initContainers": [{"name": "i", "image": "docker.io/library/busybox"}], "containers": []}}, "no tag"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "resource_type", "props", "fragment"),
    [pytest.param(*case[1:], id=case[0]) for case in BROKEN_HIDDEN_RESOURCES],
)
def test_each_rule_catches_broken_remote_children(
    rule: str, resource_type: str, props: dict[str, Any], fragment: str
) -> None:
    found = rules.violations(resource_type, props)
    assert rule in found and any(fragment in message for message in found[rule]), found


# --- what the rules deliberately allow ------------------------------------------------------------------------

ALLOWED: list[tuple[str, str, dict[str, Any]]] = [
    ("deny-with-service-wildcard", "aws:sqs/queuePolicy:QueuePolicy", {"policy": '{"Statement": [{"Effect": "Deny", "Action": "sqs:*", "Principal": "*", "Resource": "*"}]}'}),
    ("read-only-prefix", "aws:iam/policy:Policy", {"policy": '{"Statement": [{"Effect": "Allow", "Action": ["ec2:Describe*"], "Resource": "*"}]}'}),
    ("digest-pinned", "kubernetes:core/v1:Pod", {"spec": {"containers": [{"name": "c", "image": "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "a" * 64}]}}),
    ("tag-and-digest", "kubernetes:core/v1:Pod", {"spec": {"containers": [{"name": "c", "image": "registry.local:5000/img:latest@sha256:" + "b" * 64}]}}),
    ("registry-port-and-tag", "kubernetes:core/v1:Pod", {"spec": {"containers": [{"name": "c", "image": "registry.local:5000/team/img:1.2.3"}]}}),
    ("cpu-nodepool-excludes-gpus", rules.NODE_POOL, {"spec": {"template": {"spec": {"requirements": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"}]}}}}),
    ("imds-disabled", rules.LAUNCH_TEMPLATE, {"metadataOptions": {"httpEndpoint": "disabled"}, "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": True}}]}),
    ("chart-archive", "kubernetes:helm.sh/v3:Release", {"chart": "./charts/karpenter-1.14.1.tgz"}),
    ("cpu-node-group", rules.MANAGED_NODE_GROUP, {"amiType": "AL2023_x86_64_STANDARD", "instanceTypes": ["m6i.large"], "launchTemplate": {"id": "lt"}}),
    ("unrelated-type", "aws:ec2/vpc:Vpc", {"cidrBlock": "10.0.0.0/16"}),
]  # fmt: skip


@pytest.mark.parametrize(("resource_type", "props"), [pytest.param(*case[1:], id=case[0]) for case in ALLOWED])
def test_rules_allow_what_they_should(resource_type: str, props: dict[str, Any]) -> None:
    assert rules.violations(resource_type, props) == {}


# --- the pack, served as the engine runs it -----------------------------------------------------------------


def test_every_rule_is_a_mandatory_policy() -> None:
    built = policies()
    assert [p.name for p in built] == [r.name for r in rules.RULES]
    assert len(set(RULES_BY_NAME)) == len(rules.RULES)
    assert all(p.enforcement_level == EnforcementLevel.MANDATORY for p in built)


@pytest.fixture(scope="module")
def analyzer() -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """`policy/__main__.py` as Pulumi starts it: it prints its gRPC port and serves until killed."""
    server = subprocess.Popen(
        [sys.executable, str(PROJECT_DIR / "policy" / "__main__.py")],
        cwd=PROJECT_DIR / "policy",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        assert port.isdigit(), f"policy pack did not start: {server.stderr.read() if server.stderr else ''}"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
    finally:
        server.kill()
        server.wait(timeout=30)


def _analyze(stub: analyzer_pb2_grpc.AnalyzerStub, resource_type: str, props: dict[str, Any]) -> list[Any]:
    properties = struct_pb2.Struct()
    properties.update(props)
    request = analyzer_pb2.AnalyzeRequest(
        type=resource_type, properties=properties, urn=f"urn:pulumi:test::gpu-platform::{resource_type}::r", name="r"
    )
    return list(stub.Analyze(request, timeout=30).diagnostics)


def test_served_pack_lists_its_mandatory_policies(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty(), timeout=30)
    assert info.name == PACK_NAME
    assert {p.name: p.enforcementLevel for p in info.policies} == {r.name: analyzer_pb2.MANDATORY for r in rules.RULES}


def test_served_pack_blocks_a_broken_resource_and_passes_the_plans(
    analyzer: analyzer_pb2_grpc.AnalyzerStub, plans: dict[str, Plan]
) -> None:
    node_pool = _first(plans, rules.NODE_POOL)
    assert _analyze(analyzer, rules.NODE_POOL, node_pool) == []
    node_pool["spec"]["template"]["spec"]["taints"] = []
    diagnostics = _analyze(analyzer, rules.NODE_POOL, node_pool)
    assert [(d.policyName, d.enforcementLevel) for d in diagnostics] == [("gpu-nodes-tainted", analyzer_pb2.MANDATORY)]


def test_served_pack_defers_unknown_values_to_the_update(analyzer: analyzer_pb2_grpc.AnalyzerStub) -> None:
    """During preview an unknown input is reported as advisory "can't run", never as a false violation."""
    diagnostics = _analyze(analyzer, rules.LAUNCH_TEMPLATE, {"metadataOptions": UNKNOWN_OBJECT_VALUE})
    imds = [d for d in diagnostics if d.policyName == "imdsv2-required"]
    assert len(imds) == 1 and imds[0].enforcementLevel == analyzer_pb2.ADVISORY
    assert "during preview" in imds[0].message


def test_served_pack_rejects_documentation_values_even_in_a_preview(
    analyzer: analyzer_pb2_grpc.AnalyzerStub, plans: dict[str, Plan]
) -> None:
    """The shipped cluster's example CIDR and an admin's example ARN (its access entry, components/access.py) are
    caught although the KMS key ARN and the cluster name are not known yet."""
    cluster = copy.deepcopy(plans["staging"].one(rules.EKS_CLUSTER_COMPONENT, "cluster-eks")["inputs"])
    cluster["encryptionConfigKeyArn"] = UNKNOWN_OBJECT_VALUE
    entry_type = "aws:eks/accessEntry:AccessEntry"
    (entry,) = [
        copy.deepcopy(e["inputs"]) for e in plans["staging"].of_type(entry_type) if "platform-admin" in e["name"]
    ]
    entry["clusterName"] = UNKNOWN_OBJECT_VALUE
    diagnostics = [
        d
        for type_token, inputs in ((rules.EKS_CLUSTER_COMPONENT, cluster), (entry_type, entry))
        for d in _analyze(analyzer, type_token, inputs)
        if d.policyName == PLACEHOLDER_RULE
    ]
    assert [d.enforcementLevel for d in diagnostics] == [analyzer_pb2.MANDATORY] * 2
    messages = " ".join(d.message for d in diagnostics)
    assert "111122223333" in messages and "203.0.113.0/24" in messages
