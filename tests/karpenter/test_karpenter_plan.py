"""Karpenter in the synthesized plan of every stack: CRD-valid objects, official IAM, wiring and ordering."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.facts import gpu_catalog
from components.facts.constants import (
    GPU_LABEL_KEY,
    GPU_RESOURCE,
    GPU_TAINT,
    KARPENTER_NAMESPACE,
    KARPENTER_SERVICE_ACCOUNT,
    NODE_ROLE_MANAGED_POLICIES,
    gpu_node_labels,
)
from components.karpenter import controller_inputs, gpu_node_pool, node_class_basis
from components.renderers.karpenter import (
    cpu_user_pool_manifests,
    karpenter_iam,
    karpenter_interruption,
    karpenter_manifests,
    karpenter_values,
)
from components.settings import StackSettings
from offline.plan import Plan
from tests.conftest import STACKS
from tests.support.crd_validation import validate_custom_resource
from tests.support.karpenter_iam_reference import OFFICIAL_EVENT_RULES, expected_policy, statements_by_sid
from tests.support.settings import settings_for

KARPENTER = "gpu-platform:karpenter:Karpenter"
ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/policy:Policy"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
CHART = "kubernetes:helm.sh/v4:Chart"
KINDS = ("NodePool", "EC2NodeClass", "NodeOverlay")
PLACEHOLDER_ACCOUNT = "000000000000"


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest, plans: dict[str, Plan]) -> Any:
    settings = settings_for(request.param)
    return settings, plans[request.param]


def karpenter_resources(plan: Plan, type_token: str) -> list[dict[str, Any]]:
    (component,) = plan.of_type(KARPENTER)
    return [r for r in plan.of_type(type_token) if r["parent"] == component["urn"]]


def by_physical_name(plan: Plan, type_token: str, physical: str) -> dict[str, Any]:
    (match,) = [r for r in karpenter_resources(plan, type_token) if r["inputs"].get("name") == physical]
    return match


def custom_resource(plan: Plan, kind: str, name: str) -> dict[str, Any]:
    (match,) = [r for r in plan.resources if r["type"].endswith(f":{kind}") and r["inputs"]["metadata"]["name"] == name]
    return match


def node_role_arn(plan: Plan, settings: StackSettings) -> str:
    (entry,) = karpenter_resources(plan, "aws:eks/accessEntry:AccessEntry")
    arn = entry["inputs"]["principalArn"]
    assert arn == f"arn:aws:iam::{PLACEHOLDER_ACCOUNT}:role/{settings.cluster_name}-karpenter-node"
    return str(arn)


def queue_arn(plan: Plan) -> str:
    arns = {t["inputs"]["arn"] for t in karpenter_resources(plan, "aws:cloudwatch/eventTarget:EventTarget")}
    (arn,) = arns
    return str(arn)


# --- Karpenter objects ------------------------------------------------------------------------------------------


def gpu_node_pools(settings: Any, plan: Any) -> list[dict[str, Any]]:
    """The plan's GPU NodePools (not the CPU user pool)."""
    names = {pool.name for pool in settings.karpenter.node_pools}
    return [obj for obj in plan.objects("NodePool") if obj["metadata"]["name"] in names]


def test_every_karpenter_object_validates_against_the_v1_14_1_crds(stack: Any) -> None:
    settings, plan = stack
    objects = [obj for kind in KINDS for obj in plan.objects(kind)]
    pools = settings.karpenter.node_pools
    sharing_pools = [p for p in pools if settings.resolved.pool(p.name).sharing.replicas > 1]
    g6f_pools = [p for p in pools if settings.resolved.pool(p.name).slot_kind == "g6f"]  # one overlay each, by family
    expected_overlays = sum(len(karpenter_manifests.pool_gpu_counts(p)) for p in sharing_pools) + len(g6f_pools)
    cpu_user_pool = 2 if settings.cpu_user_pool_enabled else 0  # its NodePool and EC2NodeClass
    assert len(objects) == 2 * len(pools) + expected_overlays + cpu_user_pool > 0
    assert {f"{o['kind']}/{o['metadata']['name']}": validate_custom_resource(o) for o in objects} == {
        f"{o['kind']}/{o['metadata']['name']}": [] for o in objects
    }


def test_plan_objects_are_exactly_the_rendered_objects(stack: Any) -> None:
    settings, plan = stack
    role = f"{settings.cluster_name}-karpenter-node"
    expected = []
    for pool in settings.karpenter.node_pools:
        expected.append(gpu_node_pool(settings.resolved.pool(pool.name)))
        expected.append(
            karpenter_manifests.node_class(
                pool, settings.resolved.pool(pool.name).sharing, node_class_basis(settings), node_role_name=role
            )
        )
        expected.extend(karpenter_manifests.node_overlays(pool, settings.resolved.pool(pool.name).sharing))
    if settings.cpu_user_pool_enabled:
        cpu_pool = settings.karpenter.cpu_user_pool
        expected.append(cpu_user_pool_manifests.node_pool(cpu_pool))
        expected.append(
            cpu_user_pool_manifests.node_class(cpu_pool, settings.cluster_name, settings.tags, node_role_name=role)
        )

    def key(obj: dict[str, Any]) -> tuple[str, str]:
        return obj["kind"], obj["metadata"]["name"]

    actual = [obj for kind in KINDS for obj in plan.objects(kind)]
    assert sorted(actual, key=key) == sorted(expected, key=key)


def test_node_class_role_is_the_node_role_with_an_ec2_linux_access_entry(stack: Any) -> None:
    settings, plan = stack
    role = by_physical_name(plan, ROLE, f"{settings.cluster_name}-karpenter-node")
    trust = json.loads(role["inputs"]["assumeRolePolicy"])
    assert [s["Principal"] for s in trust["Statement"]] == [{"Service": "ec2.amazonaws.com"}]
    attached = {
        r["inputs"]["policyArn"] for r in karpenter_resources(plan, ATTACHMENT) if role["urn"] in r["dependencies"]
    }
    assert attached == {f"arn:aws:iam::aws:policy/{p}" for p in NODE_ROLE_MANAGED_POLICIES}
    (entry,) = karpenter_resources(plan, "aws:eks/accessEntry:AccessEntry")
    assert entry["inputs"]["type"] == "EC2_LINUX"
    assert entry["inputs"]["clusterName"] == settings.cluster_name
    assert entry["inputs"]["principalArn"] == node_role_arn(plan, settings)
    for node_class in plan.objects("EC2NodeClass"):
        assert node_class["spec"]["role"] == role["inputs"]["name"]


def test_karpenter_gpu_nodes_look_like_managed_gpu_nodes(stack: Any) -> None:
    """Same label and taint constants as the managed GPU node group (which spells effects the EKS way)."""
    settings, plan = stack
    gpu_groups = [
        r for r in plan.of_type("eks:index:ManagedNodeGroup") if GPU_LABEL_KEY in (r["inputs"].get("labels") or {})
    ]
    assert len(gpu_groups) == int(settings.gpu_node_group.enabled)
    for gpu_group in gpu_groups:
        assert gpu_group["inputs"]["taints"] == [
            {"key": GPU_TAINT["key"], "value": GPU_TAINT["value"], "effect": "NO_SCHEDULE"}
        ]
        assert gpu_group["inputs"]["labels"] == gpu_node_labels(settings.gpu_sharing.profile)
    for node_pool in gpu_node_pools(settings, plan):
        pool = next(p for p in settings.karpenter.node_pools if p.name == node_pool["metadata"]["name"])
        template = node_pool["spec"]["template"]
        assert template["spec"]["taints"] == [GPU_TAINT]
        assert template["metadata"]["labels"] == gpu_node_labels(settings.resolved.pool(pool.name).sharing.profile)


def test_capacity_math_in_the_plan(stack: Any) -> None:
    """Overlay capacity = physical GPUs x the pool's device-plugin replicas; limits = gpuLimit x replicas."""
    settings, plan = stack
    pools = {p.name: p for p in settings.karpenter.node_pools}
    for overlay in plan.objects("NodeOverlay"):
        requirements = {r["key"]: r["values"] for r in overlay["spec"]["requirements"]}
        (pool_name,) = requirements["karpenter.sh/nodepool"]
        if settings.resolved.pool(pools[pool_name].name).slot_kind == "g6f":  # EC2 reports 0 GPUs: one slice a node
            assert requirements == {"karpenter.sh/nodepool": [pool_name], "karpenter.k8s.aws/instance-family": ["g6f"]}
            assert overlay["spec"]["capacity"] == {GPU_RESOURCE: "1"}
            continue
        (gpus,) = requirements["karpenter.k8s.aws/instance-gpu-count"]
        replicas = settings.resolved.pool(pools[pool_name].name).sharing.replicas
        assert int(gpus) in {gpu_catalog.gpu_count(t) for t in pools[pool_name].selected_instance_types}
        assert overlay["spec"]["capacity"] == {GPU_RESOURCE: str(int(gpus) * replicas)}
    for node_pool in gpu_node_pools(settings, plan):
        pool = pools[node_pool["metadata"]["name"]]
        limit = node_pool["spec"]["limits"][GPU_RESOURCE]
        assert limit == str(pool.gpu_limit * settings.resolved.pool(pool.name).sharing.replicas)


# --- IAM ----------------------------------------------------------------------------------------------------------------


def test_controller_policies_in_the_plan_are_the_official_statements(stack: Any) -> None:
    settings, plan = stack
    scope = karpenter_iam.AwsScope("aws", settings.region, PLACEHOLDER_ACCOUNT, settings.cluster_name)
    controller = by_physical_name(plan, ROLE, f"{settings.cluster_name}-karpenter-controller")
    attachments = [r for r in karpenter_resources(plan, ATTACHMENT) if controller["urn"] in r["dependencies"]]
    attached_arns = {r["inputs"]["policyArn"] for r in attachments}
    assert len(attachments) == len(karpenter_iam.CONTROLLER_POLICY_PURPOSES) == 6
    for purpose, official in karpenter_iam.CONTROLLER_POLICY_PURPOSES.items():
        name = f"{settings.cluster_name}-karpenter-{purpose}"
        policy = by_physical_name(plan, POLICY, name)
        document = json.loads(policy["inputs"]["policy"])
        expected = expected_policy(
            f"KarpenterController{official}Policy", scope, node_role_arn(plan, settings), queue_arn(plan)
        )
        assert statements_by_sid(document) == expected, purpose
        assert f"arn:aws:iam::{PLACEHOLDER_ACCOUNT}:policy/{name}" in attached_arns


def test_controller_role_trusts_pod_identity_for_karpenter_only(stack: Any) -> None:
    settings, plan = stack
    controller = by_physical_name(plan, ROLE, f"{settings.cluster_name}-karpenter-controller")
    trust = json.loads(controller["inputs"]["assumeRolePolicy"])
    assert trust == karpenter_iam.controller_trust_policy(settings.cluster_name)
    (association,) = karpenter_resources(plan, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association["inputs"] == {
        "clusterName": settings.cluster_name,
        "namespace": KARPENTER_NAMESPACE,
        "serviceAccount": KARPENTER_SERVICE_ACCOUNT,
        "roleArn": f"arn:aws:iam::{PLACEHOLDER_ACCOUNT}:role/{controller['inputs']['name']}",
        "tags": settings.tags,
    }


# --- interruption handling ---------------------------------------------------------------------------------------------


def test_interruption_queue_policy_and_rules(stack: Any) -> None:
    settings, plan = stack
    (queue,) = karpenter_resources(plan, "aws:sqs/queue:Queue")
    assert queue["inputs"]["name"] == settings.cluster_name
    assert queue["inputs"]["messageRetentionSeconds"] == 300
    assert queue["inputs"]["sqsManagedSseEnabled"] is True
    assert queue["protect"] is settings.protect_resources
    arn = queue_arn(plan)
    assert arn == f"arn:aws:sqs:{settings.region}:{PLACEHOLDER_ACCOUNT}:{settings.cluster_name}"
    (queue_policy,) = karpenter_resources(plan, "aws:sqs/queuePolicy:QueuePolicy")
    assert json.loads(queue_policy["inputs"]["policy"]) == karpenter_interruption.interruption_queue_policy(arn)
    assert queue["urn"] in queue_policy["dependencies"]

    rules = karpenter_resources(plan, "aws:cloudwatch/eventRule:EventRule")
    patterns = {json.loads(r["inputs"]["eventPattern"])["detail-type"][0]: r for r in rules}
    assert {
        (json.loads(r["inputs"]["eventPattern"])["source"][0], d) for d, r in patterns.items()
    } == OFFICIAL_EVENT_RULES
    assert all("eventBusName" not in r["inputs"] for r in rules), "default bus"
    targets = karpenter_resources(plan, "aws:cloudwatch/eventTarget:EventTarget")
    assert sorted(t["inputs"]["rule"] for t in targets) == sorted(r["inputs"]["name"] for r in rules)
    assert {t["inputs"]["targetId"] for t in targets} == {"KarpenterInterruptionQueueTarget"}


# --- Helm ------------------------------------------------------------------------------------------------------------------


def test_crd_chart_then_controller_chart_without_crds(stack: Any) -> None:
    settings, plan = stack
    charts = {c["name"]: c for c in plan.helm}
    assert charts["karpenter-crd"] | {"urn": None, "values": None} == {
        "name": "karpenter-crd",
        "chart": "oci://public.ecr.aws/karpenter/karpenter-crd",
        "version": "1.14.1",
        "namespace": KARPENTER_NAMESPACE,
        "repository": None,
        "skipCrds": False,
        "urn": None,
        "values": None,
    }
    controller = charts["karpenter"]
    assert controller["chart"] == "oci://public.ecr.aws/karpenter/karpenter"
    assert (controller["version"], controller["namespace"], controller["skipCrds"]) == (
        "1.14.1",
        KARPENTER_NAMESPACE,
        True,
    )
    values = controller["values"]
    assert values["settings"]["interruptionQueue"] == settings.cluster_name
    assert values["settings"]["clusterEndpoint"].startswith("https://")
    assert values == karpenter_values.helm_values(
        controller_inputs(settings),
        cluster_endpoint=values["settings"]["clusterEndpoint"],
        interruption_queue=settings.cluster_name,
    )


# --- ordering --------------------------------------------------------------------------------------------------------------


def _urn(plan: Plan, type_token: str, name: str) -> str:
    return str(plan.one(type_token, name)["urn"])


def test_dependency_edges(stack: Any) -> None:
    settings, plan = stack
    cluster = settings.cluster_name
    crd_chart = _urn(plan, CHART, "karpenter-crd")
    controller_chart = plan.one(CHART, "karpenter-controller")
    (system_group,) = [
        r["urn"]
        for r in plan.of_type("eks:index:ManagedNodeGroup")
        if r["inputs"]["nodeGroupName"] == f"{cluster}-system"
    ]
    (eks_cluster,) = [r["urn"] for r in plan.of_type("eks:index:Cluster")]
    (queue,) = [r["urn"] for r in karpenter_resources(plan, "aws:sqs/queue:Queue")]
    (pod_identity,) = karpenter_resources(plan, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    (access_entry,) = karpenter_resources(plan, "aws:eks/accessEntry:AccessEntry")
    controller_role = by_physical_name(plan, ROLE, f"{cluster}-karpenter-controller")["urn"]
    node_role = by_physical_name(plan, ROLE, f"{cluster}-karpenter-node")["urn"]
    controller_attachments = {
        r["urn"] for r in karpenter_resources(plan, ATTACHMENT) if controller_role in r["dependencies"]
    }

    agent = plan.one("aws:eks/addon:Addon", "cluster-pod-identity-agent")["urn"]
    # The controller: CRDs, its IAM, Pod Identity credentials (association + agent), its queue, and
    # system nodes to run on.
    assert {crd_chart, *controller_attachments, pod_identity["urn"], agent, queue, system_group} <= set(
        controller_chart["dependencies"]
    )
    assert len(controller_attachments) == 6
    assert controller_chart["urn"] not in plan.by_urn(crd_chart)["dependencies"]
    # AWS resources that name the cluster wait for it.
    assert eks_cluster in pod_identity["dependencies"] and eks_cluster in access_entry["dependencies"]
    # Policies wait for the ARNs they name.
    assert node_role in by_physical_name(plan, POLICY, f"{cluster}-karpenter-iam-integration")["dependencies"]
    assert queue in by_physical_name(plan, POLICY, f"{cluster}-karpenter-interruption")["dependencies"]

    for pool in settings.karpenter.node_pools:
        node_class = custom_resource(plan, "EC2NodeClass", pool.name)
        node_pool = custom_resource(plan, "NodePool", pool.name)
        overlays = [
            custom_resource(plan, "NodeOverlay", o["metadata"]["name"])
            for o in karpenter_manifests.node_overlays(pool, settings.resolved.pool(pool.name).sharing)
        ]
        for resource in (node_class, node_pool, *overlays):
            assert {crd_chart, controller_chart["urn"]} <= set(resource["dependencies"]), resource["urn"]
        node_attachments = {r["urn"] for r in karpenter_resources(plan, ATTACHMENT) if node_role in r["dependencies"]}
        assert len(node_attachments) == 4
        assert {access_entry["urn"], node_role, *node_attachments} <= set(node_class["dependencies"])
        assert {node_class["urn"], *(o["urn"] for o in overlays)} <= set(node_pool["dependencies"])
