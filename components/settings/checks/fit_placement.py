"""The fit model's placement: the pods of `fit.workloads` onto the groups of `fit.node_groups`, and the check that
refuses a config in which one fits nowhere (naming the group's key). Pure: settings and facts only."""

from __future__ import annotations

from dataclasses import dataclass

from components.facts import gpu_catalog, pod_requests
from components.facts.node_allocatable import NO_REQUEST, Allocatable
from components.facts.pod_requests import PodShape
from components.settings.checks.fit import Labels, NodeGroup, Placed, daemonsets, node_groups, workloads
from components.settings.stack import StackSettings


@dataclass(frozen=True)
class GroupFit:
    """One group's figures: per node for a pool (its smallest type), all nodes together for the fixed group."""

    group: NodeGroup
    instance_type: str
    nodes: int
    allocatable: Allocatable
    daemonsets: tuple[PodShape, ...]
    pods: tuple[PodShape, ...]  # placed here (fixed group) or that must fit one node (pool)
    requested: Allocatable
    largest: PodShape | None
    misfit: str | None  # a packed group: why a pod it must hold does not fit; None when all do
    most_free_on_a_node: Allocatable | None = None  # a packed group: the roomiest node once everything is placed

    @property
    def free(self) -> Allocatable:
        return Allocatable(
            self.allocatable.cpu_millicores - self.requested.cpu_millicores,
            self.allocatable.memory_mib - self.requested.memory_mib,
        )


def _fits(pod: PodShape, free: Allocatable) -> bool:
    return pod.requests.cpu_millicores <= free.cpu_millicores and pod.requests.memory_mib <= free.memory_mib


def _size(pod: PodShape) -> tuple[int, int]:
    return (pod.requests.cpu_millicores, pod.requests.memory_mib)


def _describe(pod: PodShape) -> str:
    return f"{pod.name} ({pod.requests.cpu_millicores}m, {pod.requests.memory_mib} MiB; {pod.source})"


def _node_labels(group: NodeGroup, instance_type: str) -> Labels:
    return {**group.labels, "node.kubernetes.io/instance-type": instance_type}


def _group_daemonsets(
    group: NodeGroup, instance_type: str, all_daemonsets: tuple[PodShape, ...]
) -> tuple[PodShape, ...]:
    labels = _node_labels(group, instance_type)
    return tuple(ds for ds in all_daemonsets if pod_requests.can_run(ds, labels, group.taints))


def _total(pods: tuple[PodShape, ...] | list[PodShape]) -> Allocatable:
    return sum((pod.requests for pod in pods), NO_REQUEST)


def _minus(a: Allocatable, b: Allocatable) -> Allocatable:
    return Allocatable(a.cpu_millicores - b.cpu_millicores, a.memory_mib - b.memory_mib)


def node_room(group: NodeGroup, instance_type: str, all_daemonsets: tuple[PodShape, ...]) -> Allocatable:
    """What one node of this type leaves pods once the DaemonSets that take it are placed."""
    return _minus(group.allocatable(instance_type), _total(_group_daemonsets(group, instance_type, all_daemonsets)))


def pack(group: NodeGroup, pods: list[PodShape], all_daemonsets: tuple[PodShape, ...]) -> GroupFit:
    """First-fit decreasing onto the packed group's nodes of its smallest type (one per node where a pod asks)."""
    instance_type, nodes = group.smallest, group.fixed_nodes or 0
    ds = _group_daemonsets(group, instance_type, all_daemonsets)
    per_node = group.allocatable(instance_type)
    free = [_minus(per_node, _total(ds))] * nodes
    holds: list[set[str]] = [set() for _ in range(nodes)]
    replicas = sorted((pod for pod in pods for _ in range(pod.count)), key=_size, reverse=True)
    misfit = None
    for pod in replicas:
        node = next(
            (i for i in range(nodes) if _fits(pod, free[i]) and not (pod.one_per_node and pod.name in holds[i])), None
        )
        if node is None:
            misfit = misfit or (
                f"{_describe(pod)} does not fit on the {nodes} x {instance_type} {group.name} nodes beside the other "
                f"pods there ({per_node.cpu_millicores}m / {per_node.memory_mib} MiB allocatable per node, "
                f"DaemonSets {_total(ds).cpu_millicores}m / {_total(ds).memory_mib} MiB per node, most free on one "
                f"node {max(f.cpu_millicores for f in free)}m); use a larger instance type or more nodes (desiredSize)"
            )
            continue
        free[node] = _minus(free[node], pod.requests)
        holds[node].add(pod.name)
    requested = Allocatable(_total(ds).cpu_millicores * nodes, _total(ds).memory_mib * nodes) + _total(replicas)
    all_nodes = Allocatable(per_node.cpu_millicores * nodes, per_node.memory_mib * nodes)
    largest = max(replicas, key=_size, default=None)
    roomiest = max(free, key=lambda f: (f.cpu_millicores, f.memory_mib), default=None)
    return GroupFit(group, instance_type, nodes, all_nodes, ds, tuple(replicas), requested, largest, misfit, roomiest)


def _per_node(group: NodeGroup, pods: list[PodShape], all_daemonsets: tuple[PodShape, ...]) -> GroupFit:
    """A group that scales (or GPU pods that may go elsewhere): one node of its smallest type."""
    instance_type = group.smallest
    ds = _group_daemonsets(group, instance_type, all_daemonsets)
    largest = max(pods, key=_size, default=None)
    return GroupFit(
        group, instance_type, 1, group.allocatable(instance_type), ds, tuple(pods), _total(ds), largest, None
    )


def _misfit_nowhere(placed: Placed, takers: list[NodeGroup], all_daemonsets: tuple[PodShape, ...]) -> str | None:
    """Why a pod that goes to a scaling group fits no node of any group that takes it (None: it fits one)."""
    if not takers:
        return f"{placed.key}: {_describe(placed.pod)} can run on no node group of this stack (its selector and tolerations)"
    rooms = [(g, node_room(g, t, all_daemonsets)) for g in takers for t in g.instance_types]
    if any(_fits(placed.pod, room) for _, room in rooms):
        return None
    group, best = max(rooms, key=lambda gr: (gr[1].cpu_millicores, gr[1].memory_mib))
    return (
        f"{group.key}: {_describe(placed.pod)} fits no node of {', '.join(g.name for g in takers)} (at most "
        f"{best.cpu_millicores}m / {best.memory_mib} MiB free on one node once its DaemonSets run); add a larger "
        "instance type"
    )


def _place(settings: StackSettings) -> tuple[tuple[GroupFit, ...], list[str]]:
    groups = node_groups(settings)
    all_ds = daemonsets(settings)
    on_group: dict[str, list[PodShape]] = {group.name: [] for group in groups}
    problems: list[str] = []
    for placed in workloads(settings):
        takers = [g for g in groups if pod_requests.can_run(placed.pod, _node_labels(g, g.smallest), g.taints)]
        packed = [g for g in takers if g.packed]
        # The system nodes are the only nodes at creation: whatever they can take, they must hold.
        for group in packed[:1] or takers:
            on_group[group.name].append(placed.pod)
        problem = None if packed else _misfit_nowhere(placed, takers, all_ds)
        if problem is not None:
            problems.append(problem)
    fits = tuple(
        pack(g, on_group[g.name], all_ds) if g.packed else _per_node(g, on_group[g.name], all_ds) for g in groups
    )
    return fits, [f"{fit.group.key}: {fit.misfit}" for fit in fits if fit.misfit] + problems


def group_fits(settings: StackSettings) -> tuple[GroupFit, ...]:
    """Every node group's fit, in `fit.node_groups` order."""
    return _place(settings)[0]


def check(settings: StackSettings) -> None:
    """ValueError("<key>: ...") naming the group's key when a pod the plan runs fits nowhere."""
    problems = _place(settings)[1]
    if problems:
        raise ValueError(problems[0])
    cpu = settings.karpenter.cpu_user_pool
    if settings.cpu_user_pool_enabled:
        need = min(gpu_catalog.vcpus(t) for t in cpu.instance_types)
        if cpu.cpu_limit < need:
            raise ValueError(
                f"karpenter.cpuUserPool.cpuLimit: {cpu.cpu_limit} vCPUs cannot hold one node of its smallest type "
                f"({need} vCPUs); raise it"
            )
