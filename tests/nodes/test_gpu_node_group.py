"""Managed GPU node group as planned by the offline synth: launch template, node group, node role."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from components.facts.constants import (
    GPU_TAINT_EFFECT_EKS,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    NODE_METADATA_OPTIONS,
    NODE_ROLE_MANAGED_POLICIES,
    ROOT_DEVICE_NAME,
    gpu_node_labels,
)
from components.gpu_node_group import GPU_AMI_TYPE
from components.renderers.nodes.gpu_bootstrap import NODECONFIG_CONTENT_TYPE, SHELL_CONTENT_TYPE, render_gpu_user_data
from components.settings import SettingsError, StackSettings, load_settings
from offline.plan import Plan
from tests.conftest import STACKS
from tests.support.settings import settings_for
from tests.support.user_data import mime_parts, node_config_of, shell_part_of

COMPONENT = "gpu-platform:gpu:GpuNodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "eks:index:ManagedNodeGroup"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
# Set by pulumi-eks' own launch template only; with ours pulumi-eks rejects them (pulumi/pulumi-eks
# nodejs/eks/nodes/nodegroup.ts @ v4.4.0: "If you provide a custom launch template, you cannot provide ...").
FORBIDDEN_WITH_OWN_TEMPLATE = (
    "userData", "kubeletExtraArgs", "bootstrapExtraArgs", "nodeadmExtraOptions", "enableIMDSv2",
    "enableImdSv2", "amiId", "gpu", "diskSize", "remoteAccess",
)  # fmt: skip


def children(plan: Plan) -> dict[str, list[dict[str, Any]]]:
    """The single GpuNodeGroup component's children, by type."""
    [component] = plan.of_type(COMPONENT)
    by_type: dict[str, list[dict[str, Any]]] = {}
    for resource in plan.resources:
        if resource["parent"] == component["urn"]:
            by_type.setdefault(resource["type"], []).append(resource)
    return by_type


def only(plan: Plan, type_token: str) -> dict[str, Any]:
    [resource] = children(plan)[type_token]
    return resource


def mock_id(resource: dict[str, Any]) -> str:
    """The id the offline mocks give a custom resource (`<logical name>-id`)."""
    return f"{resource['name']}-id"


# Stacks that run a managed GPU node group: none as shipped (staging keeps warm Karpenter headroom, prod
# scales from zero), so the group is proven on a copy of staging that turns it on.
MANAGED_GROUP_STACKS = [s for s in STACKS if settings_for(s).gpu_node_group.enabled]


@pytest.fixture(scope="module")
def plan(managed_group_plan: Plan) -> Plan:
    return managed_group_plan


@pytest.fixture(scope="module")
def settings(managed_group_config: dict[str, str]) -> StackSettings:
    return load_settings(managed_group_config)


def test_component_has_exactly_its_children(plan: Plan) -> None:
    counts = {type_token: len(resources) for type_token, resources in children(plan).items()}
    assert counts == {LAUNCH_TEMPLATE: 1, ROLE: 1, ATTACHMENT: len(NODE_ROLE_MANAGED_POLICIES), NODE_GROUP: 1}


def test_launch_template_is_locked_down(plan: Plan, settings: StackSettings) -> None:
    inputs = only(plan, LAUNCH_TEMPLATE)["inputs"]
    name = f"{settings.cluster_name}-gpu"
    assert inputs["name"] == name
    # The EC2NodeClass metadata options, in the launch template API's spelling: IMDSv2 only, one hop.
    assert inputs["metadataOptions"] == {
        "httpEndpoint": NODE_METADATA_OPTIONS["httpEndpoint"],
        "httpProtocolIpv6": NODE_METADATA_OPTIONS["httpProtocolIPv6"],
        "httpPutResponseHopLimit": 1,
        "httpTokens": "required",
    }
    volume = settings.gpu_nodes.root_volume
    assert inputs["blockDeviceMappings"] == [
        {
            "deviceName": ROOT_DEVICE_NAME,
            "ebs": {
                "volumeType": "gp3",
                "volumeSize": volume.size_gib,
                "iops": volume.iops,
                "throughput": volume.throughput_mibps,
                "encrypted": "true",
                "deleteOnTermination": str(volume.delete_on_termination).lower(),
            },
        }
    ]
    assert sorted(spec["resourceType"] for spec in inputs["tagSpecifications"]) == ["instance", "volume"]
    assert all(spec["tags"] == {**settings.tags, "Name": name} for spec in inputs["tagSpecifications"])
    # The node group's amiType picks the AMI; subnets and the instance profile are the node group's business.
    assert not {"imageId", "iamInstanceProfile", "networkInterfaces"} & set(inputs)
    # The shared node security group (the one Karpenter selects), not EKS's default cluster group.
    assert len(inputs["vpcSecurityGroupIds"]) == 1


def test_launch_template_user_data_is_the_gpu_bootstrap(plan: Plan, settings: StackSettings) -> None:
    user_data = base64.b64decode(only(plan, LAUNCH_TEMPLATE)["inputs"]["userData"], validate=True).decode("ascii")
    labels = gpu_node_labels(settings.gpu_sharing.profile)
    assert user_data == render_gpu_user_data(
        settings.gpu_node_bootstrap, launched_by="managed-node-group", node_labels=labels
    )
    assert [content_type for content_type, _ in mime_parts(user_data)] == [NODECONFIG_CONTENT_TYPE, SHELL_CONTENT_TYPE]
    config = node_config_of(user_data)["spec"]["kubelet"]["config"]
    assert (config["maxPods"], config["podPidsLimit"]) == (
        settings.gpu_nodes.max_pods,
        settings.gpu_nodes.pod_pids_limit,
    )
    script = shell_part_of(user_data)
    assert settings.gpu_nodes.pre_pull_images
    assert all(f"\n  {image}\n" in script for image in settings.gpu_nodes.pre_pull_images)


def test_node_group_is_tainted_gpu_capacity_on_the_launch_template(plan: Plan, settings: StackSettings) -> None:
    node_group = only(plan, NODE_GROUP)
    launch_template = only(plan, LAUNCH_TEMPLATE)
    inputs = node_group["inputs"]
    group = settings.gpu_node_group
    assert inputs["nodeGroupName"] == f"{settings.cluster_name}-gpu"
    assert inputs["amiType"] == GPU_AMI_TYPE
    assert inputs["version"] == settings.kubernetes_version
    assert inputs["instanceTypes"] == group.instance_types
    assert inputs["capacityType"] == group.capacity_type
    assert inputs["scalingConfig"] == {
        "minSize": group.min_size,
        "desiredSize": group.desired_size,
        "maxSize": group.max_size,
    }
    assert inputs["labels"] == gpu_node_labels(settings.gpu_sharing.profile)
    assert inputs["taints"] == [{"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": GPU_TAINT_EFFECT_EKS}]
    assert inputs["launchTemplate"] == {"id": mock_id(launch_template), "version": "1"}
    assert launch_template["urn"] in node_group["dependencies"]
    assert not set(FORBIDDEN_WITH_OWN_TEMPLATE) & set(inputs)
    [cluster] = plan.of_type("eks:index:Cluster")
    assert inputs["cluster"] == cluster["urn"]


def test_node_group_runs_in_the_private_subnets(plan: Plan) -> None:
    private = [
        subnet
        for subnet in plan.of_type("aws:ec2/subnet:Subnet")
        if subnet["inputs"].get("tags", {}).get("kubernetes.io/role/internal-elb") == "1"
    ]
    assert private
    assert sorted(only(plan, NODE_GROUP)["inputs"]["subnetIds"]) == sorted(mock_id(subnet) for subnet in private)


def test_node_role_trusts_ec2_with_exactly_the_node_policies(plan: Plan, settings: StackSettings) -> None:
    role = only(plan, ROLE)
    assert role["inputs"]["name"] == f"{settings.cluster_name}-gpu-node"
    trust = json.loads(role["inputs"]["assumeRolePolicy"])
    assert trust["Statement"] == [
        {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ]
    attachments = children(plan)[ATTACHMENT]
    assert {a["inputs"]["role"] for a in attachments} == {role["inputs"]["name"]}
    assert sorted(a["inputs"]["policyArn"] for a in attachments) == sorted(
        f"arn:aws:iam::aws:policy/{policy}" for policy in NODE_ROLE_MANAGED_POLICIES
    )
    assert only(plan, NODE_GROUP)["inputs"]["nodeRole"] == mock_id(role)


def test_seed_stacks_keep_their_scaling_intent(plans: dict[str, Plan]) -> None:
    """Neither shipped stack runs a managed GPU group: staging keeps warm Karpenter headroom, prod scales from zero."""
    assert MANAGED_GROUP_STACKS == []
    for plan in plans.values():
        assert plan.of_type(COMPONENT) == []
        assert plan.of_type("kubernetes:karpenter.sh/v1:NodePool")


def test_disabled_node_group_creates_nothing(plans: dict[str, Plan]) -> None:
    """Staging turns the managed GPU group off."""
    plan = plans["staging"]
    assert plan.of_type(COMPONENT) == []
    assert plan.of_type(NODE_GROUP), "the system node group is still there"
    assert not [r for r in plan.of_type(NODE_GROUP) if r["inputs"]["amiType"] == GPU_AMI_TYPE]


# Settings rules behind this issue that tests/settings/test_settings.py does not already exercise.
@pytest.mark.parametrize(
    ("patch", "path", "fragment"),
    [
        ({"maxPods": 5}, "gpu-platform:gpuNodes.maxPods", "between 10 and 250"),
        ({"podPidsLimit": 5_000_000}, "gpu-platform:gpuNodes.podPidsLimit", "between 1024 and 4194304"),
        ({"rootVolume": {"sizeGib": 100, "iops": 80000}}, "gpu-platform:gpuNodes.rootVolume.iops", "needs at least 160 GiB"),
    ],
)  # fmt: skip
def test_bad_gpu_node_settings_name_their_key(
    stack_configs: dict[str, dict[str, str]], patch: dict[str, Any], path: str, fragment: str
) -> None:
    config = dict(stack_configs["staging"])
    config["gpu-platform:gpuNodes"] = json.dumps({**json.loads(config["gpu-platform:gpuNodes"]), **patch})
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    assert any(p == path and fragment in message for p, message in caught.value.problems), caught.value.problems
