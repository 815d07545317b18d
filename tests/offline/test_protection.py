"""Protection and disruption limits, read from the recorded plan of every stack.

- A stack with `protectResources: true` (prod) protects what is stateful or foundational: deleting the
  EKS cluster, the VPC, the KMS key (secrets become unreadable) or the interruption queue by accident
  must need an explicit unprotect; a stack without it (staging) protects nothing, so it can be torn down.
- GPU NodePool disruption budgets never let Karpenter disrupt every GPU node of a pool at once.
- The Karpenter controller keeps a PodDisruptionBudget that leaves one replica running.
"""

from __future__ import annotations

import pytest

from components.facts import gpu_catalog
from components.settings import NodePoolSettings, StackSettings
from offline.plan import Plan
from tests.conftest import STACKS
from tests.support.settings import settings_for

# Stateful or foundational types, and whether the settings guarantee the stack creates one.
FOUNDATIONS: dict[str, str] = {
    "eks:index:Cluster": "the EKS cluster",
    "aws:ec2/vpc:Vpc": "the VPC",
    "aws:kms/key:Key": "the KMS key encrypting Kubernetes secrets",
    "aws:sqs/queue:Queue": "the Karpenter interruption queue",
}
KARPENTER_CHART = "oci://public.ecr.aws/karpenter/karpenter"
# Chart default (aws/karpenter-provider-aws charts/karpenter/values.yaml @ v1.14.1, `podDisruptionBudget`): used
# when the values do not override it.
CHART_DEFAULT_PDB = {"name": "karpenter", "maxUnavailable": 1}
# Karpenter's CRD default when a NodePool sets no budgets.
DEFAULT_BUDGETS = [{"nodes": "10%"}]


@pytest.fixture(scope="module")
def settings_of() -> dict[str, StackSettings]:
    return {stack: settings_for(stack) for stack in STACKS}


def _expected_foundations(settings: StackSettings) -> set[str]:
    expected = {"eks:index:Cluster", "aws:kms/key:Key"}
    if settings.network.existing is None:
        expected.add("aws:ec2/vpc:Vpc")
    if settings.karpenter.enabled:
        expected.add("aws:sqs/queue:Queue")
    return expected


def test_prod_protects_and_staging_does_not(settings_of: dict[str, StackSettings]) -> None:
    assert settings_of["prod"].protect_resources is True
    assert settings_of["staging"].protect_resources is False


@pytest.mark.parametrize("stack", STACKS)
def test_foundations_follow_protect_resources(
    plans: dict[str, Plan], settings_of: dict[str, StackSettings], stack: str
) -> None:
    plan, protect = plans[stack], settings_of[stack].protect_resources
    for type_token in _expected_foundations(settings_of[stack]):
        assert plan.of_type(type_token), f"{stack}: no {FOUNDATIONS[type_token]} in the plan"
    wrong = [
        f"{r['type']} {r['name']}: protect={r['protect']}"
        for type_token in FOUNDATIONS
        for r in plan.of_type(type_token)
        if r["protect"] is not protect
    ]
    assert wrong == [], f"{stack} (protectResources={protect})"


@pytest.mark.parametrize("stack", STACKS)
def test_cluster_deletion_protection_follows_protect_resources(
    plans: dict[str, Plan], settings_of: dict[str, StackSettings], stack: str
) -> None:
    """Pulumi's protect guards the stack; EKS deletion protection also guards the console and the API."""
    (cluster,) = plans[stack].of_type("eks:index:Cluster")
    assert cluster["inputs"].get("deletionProtection", False) is settings_of[stack].protect_resources


@pytest.mark.parametrize("stack", STACKS)
def test_unprotected_stacks_protect_nothing(
    plans: dict[str, Plan], settings_of: dict[str, StackSettings], stack: str
) -> None:
    if settings_of[stack].protect_resources:
        assert any(r["protect"] for r in plans[stack].resources)
    else:
        assert [r["name"] for r in plans[stack].resources if r["protect"]] == []


# --- NodePool disruption budgets -----------------------------------------------------------------------------


def max_nodes(pool: NodePoolSettings) -> int:
    """Upper bound of the pool's node count: its physical GPU limit over the smallest GPU count per node."""
    smallest = min(gpu_catalog.gpu_count(t) for t in pool.selected_instance_types)
    return max(1, pool.gpu_limit // smallest)


def budget_problem(nodes: str, pool_max_nodes: int) -> str | None:
    if nodes.endswith("%"):
        return None if int(nodes[:-1]) < 100 else f"{nodes} lets Karpenter disrupt every node"
    if int(nodes) >= pool_max_nodes and pool_max_nodes > 1:
        return f"{nodes} nodes >= the {pool_max_nodes} nodes the pool can have"
    return None


@pytest.mark.parametrize("stack", STACKS)
def test_node_pool_budgets_never_allow_every_gpu_node(
    plans: dict[str, Plan], settings_of: dict[str, StackSettings], stack: str
) -> None:
    settings = settings_of[stack]
    pools = {p.name: max_nodes(p) for p in settings.karpenter.node_pools}
    # The learners' CPU user pool: at most cpuLimit over its smallest type's vCPUs nodes.
    user_pool = settings.karpenter.cpu_user_pool
    pools[user_pool.name] = max(1, user_pool.cpu_limit // min(gpu_catalog.vcpus(t) for t in user_pool.instance_types))
    node_pools = plans[stack].objects("NodePool")
    assert {np["metadata"]["name"] for np in node_pools} == set(pools)
    for node_pool in node_pools:
        name = node_pool["metadata"]["name"]
        budgets = node_pool["spec"].get("disruption", {}).get("budgets", DEFAULT_BUDGETS)
        assert budgets, f"{stack}/{name}: an empty budget list leaves disruption unlimited"
        problems = [p for b in budgets if (p := budget_problem(str(b["nodes"]), pools[name]))]
        assert problems == [], f"{stack}/{name}"


@pytest.mark.parametrize(
    ("nodes", "pool_max_nodes", "allowed"),
    [("100%", 8, False), ("99%", 8, True), ("10%", 8, True), ("8", 8, False), ("1", 8, True), ("0", 8, True)],
)
def test_budget_check_catches_unlimited_budgets(nodes: str, pool_max_nodes: int, allowed: bool) -> None:
    assert (budget_problem(nodes, pool_max_nodes) is None) is allowed


# --- Karpenter controller ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_karpenter_controller_keeps_a_disruption_budget(
    plans: dict[str, Plan], settings_of: dict[str, StackSettings], stack: str
) -> None:
    if not settings_of[stack].karpenter.enabled:
        pytest.fail(f"{stack}: Karpenter is disabled; this test expects it in every stack")
    (controller,) = [h for h in plans[stack].helm if h["chart"] == KARPENTER_CHART]
    values = controller["values"]
    replicas = values.get("replicas", 2)
    assert replicas == settings_of[stack].karpenter.replicas
    assert replicas >= 2, f"{stack}: one controller replica means no budget can keep Karpenter running"
    pdb = {**CHART_DEFAULT_PDB, **(values.get("podDisruptionBudget") or {})}
    if "minAvailable" in pdb:
        assert int(pdb["minAvailable"]) >= 1, pdb
    else:
        assert int(pdb["maxUnavailable"]) < replicas, pdb
