"""A small model of how Karpenter packs one batch of pending GPU pods onto new nodes.

Pure: the Karpenter and demo sections and the pools' capacity in, plain rows out. What it models
(kubernetes-sigs/karpenter @ v1.14.1 = 6e7eab7a0f48, the core aws/karpenter-provider-aws v1.14.1 pins in go.mod,
`KARPENTER_VERSION`):

- `pkg/controllers/provisioning/scheduling/queue.go` `NewQueue` / `byCPUAndMemoryDescending`: the pods of
  one provisioning batch are tried largest first; every pod here asks for one shared slot, so the order
  does not change the answer.
- `pkg/controllers/provisioning/scheduling/scheduler.go` `Scheduler.add`: a pod goes to a running node with
  room first (`addToExistingNode`; a first batch has none), then to the in-flight NodeClaims of this batch
  (`addToInflightNode`, fewest pods first); only when none can take it does a new NodeClaim open with every
  instance type of the pool (`addToNewNodeClaim`).
- `pkg/controllers/provisioning/scheduling/nodeclaim.go` `NodeClaim.CanAdd` ->
  `filterInstanceTypesByRequirements`: a NodeClaim takes the pod while *any* of its remaining instance
  types still fits the claim's summed requests; the types that no longer fit are dropped.
- At launch the cloud provider picks the cheapest remaining type (karpenter-provider-aws orders offerings
  by price). The model ranks by physical GPUs, then by size within the family (the EC2 price order of one
  family; no price table is needed offline).

So when a pool mixes a 1-GPU and a 4-GPU type, one batch of more slots than a 1-GPU node holds stays on a
single NodeClaim whose only remaining option is the 4-GPU type: Karpenter buys the big node. With
consolidation `WhenEmpty` it keeps it until it is empty or expires.

Modelled resource: `nvidia.com/gpu` slots (GPUs x sharing replicas). CPU and memory are left out: the
warm slot shape is shrunk until a node's slots fit (`warm_headroom_manifests`), and the demo pod asks for
1 CPU / 2 GiB per slot, so the slot count binds first on every type of the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from components.facts import gpu_catalog
from components.renderers.labs.demo_manifests import DEMO_GPUS_PER_POD
from components.settings import DemoSettings, KarpenterSettings
from components.settings.resolved import ResolvedPool, ResolvedStack

# EC2 size order within one family (cheapest first); sizes not listed sort last.
SIZE_ORDER: Final = ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge", "24xlarge", "48xlarge")


def price_rank(instance_type: str) -> tuple[int, int, str]:
    """The model's stand-in for EC2 price: fewer GPUs first, then the smaller size of the family."""
    size = instance_type.partition(".")[2]
    order = SIZE_ORDER.index(size) if size in SIZE_ORDER else len(SIZE_ORDER)
    return (gpu_catalog.gpu_count(instance_type), order, instance_type)


@dataclass(frozen=True)
class PlannedNode:
    """One NodeClaim of the batch: the slots put on it and the instance type it launches as."""

    instance_type: str
    slots: int
    options: tuple[str, ...]  # the instance types still able to hold `slots` when the batch closed


def pack(slot_requests: list[int], slots_per_type: dict[str, int]) -> list[PlannedNode]:
    """NodeClaims one batch opens: each pod (its slots) goes to an in-flight claim if any remaining type fits."""
    claims: list[tuple[int, list[str]]] = []  # (slots on the claim, remaining instance types)
    for request in sorted(slot_requests, reverse=True):  # queue.go: largest first
        for index in sorted(range(len(claims)), key=lambda i: claims[i][0]):  # scheduler.go: fewest pods first
            used, options = claims[index]
            remaining = [t for t in options if slots_per_type[t] >= used + request]
            if remaining:
                claims[index] = (used + request, remaining)
                break
        else:
            fitting = [t for t in slots_per_type if slots_per_type[t] >= request]
            if not fitting:
                raise ValueError(f"no instance type holds a pod of {request} slots")
            claims.append((request, fitting))
    return [
        PlannedNode(min(options, key=price_rank), used, tuple(sorted(options, key=price_rank)))
        for used, options in claims
    ]


@dataclass(frozen=True)
class FirstBatchRow:
    pool: str
    demo_slots: int
    warm_slots: int
    nodes: tuple[PlannedNode, ...]

    @property
    def node_count(self) -> int:
        return len(self.nodes)

    @property
    def instance_types(self) -> tuple[str, ...]:
        return tuple(sorted({node.instance_type for node in self.nodes}, key=price_rank))


def pool_slots_per_type(pool: ResolvedPool) -> dict[str, int]:
    return {node.instance_type: node.slots for node in pool.nodes}


def demo_pool(karpenter: KarpenterSettings) -> str | None:
    """The pool Karpenter offers the demo pods the managed group cannot hold: the highest weight, then the name."""
    if not karpenter.enabled or not karpenter.node_pools:
        return None
    return min(karpenter.node_pools, key=lambda p: (-p.weight, p.name)).name


def first_batch_rows(karpenter: KarpenterSettings, demo: DemoSettings, resolved: ResolvedStack) -> list[FirstBatchRow]:
    """Per Karpenter pool: the nodes the first batch (demo pods beyond the managed group + warm slots) opens.

    `resolved`: the stack's pools (`StackSettings.resolved`): the Karpenter pools, and the slots the managed group's
    desired nodes offer.
    """
    demo_slots = demo.replicas * DEMO_GPUS_PER_POD if demo.enabled else 0
    demo_slots = max(0, demo_slots - resolved.managed_group_slots)
    target = demo_pool(karpenter)
    rows = []
    for pool in resolved.karpenter_pools:
        warm = pool.settings.warm_gpu_slots
        pool_demo = demo_slots if pool.name == target else 0
        requests = [DEMO_GPUS_PER_POD] * (pool_demo // DEMO_GPUS_PER_POD) + [1] * warm
        if not requests:
            continue
        nodes = pack(requests, pool_slots_per_type(pool))
        rows.append(FirstBatchRow(pool.name, pool_demo, warm, tuple(nodes)))
    return rows


def mixed_gpu_count_warnings(karpenter: KarpenterSettings) -> list[str]:
    """One warning per pool whose instance types differ in physical GPU count (the packing risk).

    Only a pool with `allowMixedGpuCounts: true` gets here: the settings refuse any other mixed pool."""
    if not karpenter.enabled:
        return []
    warnings = []
    for pool in karpenter.node_pools:
        if not pool.allow_mixed_gpu_counts:
            continue
        counts = sorted({gpu_catalog.gpu_count(t) for t in pool.selected_instance_types})
        if len(counts) > 1:
            largest = max(pool.selected_instance_types, key=price_rank)
            warnings.append(
                f"WARNING: pool {pool.name} mixes instance types with {', '.join(map(str, counts))} GPUs: a batch of "
                f"pending pods larger than one small node's slots stays on one NodeClaim and can launch as {largest} "
                "(Karpenter fills an in-flight NodeClaim while any type still fits); allowMixedGpuCounts is true: split the "
                "pool by GPU count"
            )
    return warnings
