"""One capacity model, in the resolved model (components/settings/resolved.py): GPUs, vCPUs, slots per node, allocatable, nodes within
limits and quota vCPUs are worked out once per pool from the one catalog, and nothing else multiplies GPUs by
sharing replicas.
"""

from __future__ import annotations

import ast

import pytest

from components.facts import gpu_catalog
from tests.conftest import PROJECT_DIR, STACKS, parsed, program_files
from tests.support.settings import settings_for

CAPACITY_MODEL = PROJECT_DIR / "components" / "settings" / "resolved.py"
GPU_NAMES = frozenset({"gpus", "physical_gpus", "gpu_limit", "gpu_count"})


def _mentions_sharing_replicas(expr: ast.expr) -> bool:
    """`replicas` or `<x>.replicas`, except the demo Deployment's pod count (`settings.demo.replicas`)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id == "replicas":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "replicas" and not ast.unparse(node.value).endswith("demo"):
            return True
    return False


def _mentions_gpus(expr: ast.expr) -> bool:
    return any(
        (isinstance(node, ast.Name) and node.id in GPU_NAMES)
        or (isinstance(node, ast.Attribute) and node.attr in GPU_NAMES)
        for node in ast.walk(expr)
    )


def gpus_times_replicas(source: str) -> list[tuple[int, str]]:
    """(line, expression) of each product of a GPU count and sharing replicas in `source`."""
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(parsed(source))
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and (
            (_mentions_gpus(node.left) and _mentions_sharing_replicas(node.right))
            or (_mentions_sharing_replicas(node.left) and _mentions_gpus(node.right))
        )
    ]


def test_nothing_but_the_capacity_model_multiplies_gpus_by_replicas() -> None:
    found = {
        f"{path.relative_to(PROJECT_DIR)}:{line}": expression
        for path in program_files()
        if path != CAPACITY_MODEL
        for line, expression in gpus_times_replicas(path.read_text(encoding="utf-8"))
    }
    assert found == {}, "read slots from components/settings/resolved.py (resolved.slots, ResolvedPool)"
    [(_, product)] = gpus_times_replicas(CAPACITY_MODEL.read_text(encoding="utf-8"))
    assert product == "physical_gpus * replicas"  # resolved.slots: the one product


def test_the_scan_sees_every_spelling_of_the_product() -> None:
    """The products the code once held (settings.py, gpu_capacity.py), and the demo's pod count it leaves alone."""
    assert gpus_times_replicas("x = gpu_catalog.gpu_count(t) * self.sharing_for(pool).replicas") != []
    assert gpus_times_replicas("x = physical_gpus * sharing.replicas") != []
    assert gpus_times_replicas("x = pool.gpu_limit * replicas") != []
    assert gpus_times_replicas("x = replicas * gpus") != []
    assert gpus_times_replicas("x = settings.demo.replicas * DEMO_GPUS_PER_POD") == []
    assert gpus_times_replicas("x = memory // sharing.replicas") == []


@pytest.mark.parametrize("stack", STACKS)
def test_every_pool_reads_the_catalog(stack: str) -> None:
    settings = settings_for(stack)
    pools = settings.resolved.pools
    assert pools
    for pool in pools:
        for node in pool.nodes:
            assert (node.gpus, node.vcpus) == (
                gpu_catalog.gpu_count(node.instance_type),
                gpu_catalog.vcpus(node.instance_type),
            )
            assert node.slots == node.gpus * pool.replicas
            assert 0 < node.allocatable.cpu_millicores < node.vcpus * 1000
            assert 0 < node.allocatable.memory_mib < gpu_catalog.memory_mib(node.instance_type)


def test_nodes_within_limits_and_quota_vcpus_hand_counted() -> None:
    """g4dn.xlarge: 1 GPU, 4 vCPUs; g4dn.12xlarge: 4 GPUs, 48 vCPUs; 2 replicas, gpuLimit 4, cpuLimit 16."""
    pool = {"name": "p", "instanceTypes": ["g4dn.xlarge", "g4dn.12xlarge"], "gpuLimit": 4, "cpuLimit": 16}
    pool["allowMixedGpuCounts"] = True  # a mixed pool, to count both types (refused without the opt-in)
    (held,) = settings_for("staging", pools=[pool], gpuSharing={"replicas": 2}).resolved.karpenter_pools
    assert [(n.instance_type, n.slots) for n in held.nodes] == [("g4dn.12xlarge", 8), ("g4dn.xlarge", 2)]
    assert held.slot_limit == 8
    # 8 slots: 4 xlarge nodes (16 vCPUs, 4 GPUs) fit; one 12xlarge has 48 vCPUs > 16.
    assert held.within_limits(8) == ("g4dn.xlarge",)
    # 9 slots: 5 xlarge nodes (20 vCPUs) or 2 12xlarge nodes (8 GPUs): neither fits.
    assert held.within_limits(9) == ()
    # The GPU limit is reached soonest on 12xlarge (12 vCPUs per GPU): 4 x 12 = 48, capped by cpuLimit 16.
    assert held.quota_vcpus == 16
    assert held.node("g4dn.xlarge").nodes_for(3) == 2


def test_the_managed_group_counts_its_nodes() -> None:
    """Managed group of g4dn.xlarge and g4dn.12xlarge at 2 replicas, desired 2 and max 3 nodes."""
    group = {"instanceTypes": ["g4dn.xlarge", "g4dn.12xlarge"], "minSize": 1, "desiredSize": 2, "maxSize": 3}
    held = settings_for("staging", pools=[], gpuNodeGroup=group, gpuSharing={"replicas": 2}).resolved.managed_group
    assert held is not None
    assert held.desired_slots == 2 * 2  # the smallest type's 2 slots on each desired node
    assert [held.slots_at_limit(node) for node in held.nodes] == [6, 24]
    assert held.quota_vcpus == 3 * 48
    assert settings_for("staging", gpuNodeGroup={"enabled": False}).resolved.managed_group is None
