"""The fit model's placement: the pods of `fit.workloads` onto the groups of `fit.node_groups`, and the check that
refuses a config in which one fits nowhere (naming the group's key). Pure: settings and facts only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from components.facts import gpu_catalog, pod_requests
from components.facts.node_allocatable import NO_REQUEST, Allocatable
from components.facts.pod_requests import PodShape
from components.settings.fit import Labels, NodeGroup, Placed, daemonsets, node_groups, workloads

if TYPE_CHECKING:
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
    misfit: str | None  # why a pod does not fit, None when all do

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


def _pack(group: NodeGroup, pods: list[Placed], all_daemonsets: tuple[PodShape, ...]) -> tuple[GroupFit, Placed | None]:
    """First-fit decreasing onto the fixed group's nodes of its smallest type; the first pod left over, if any."""
    instance_type, nodes = group.smallest, group.fixed_nodes or 0
    ds = _group_daemonsets(group, instance_type, all_daemonsets)
    per_node = group.allocatable(instance_type)
    free = [per_node + Allocatable(-_total(ds).cpu_millicores, -_total(ds).memory_mib)] * nodes
    holds: list[set[str]] = [set() for _ in range(nodes)]
    replicas = sorted(
        ((p, placed) for placed in pods for p in [placed.pod] * placed.pod.count),
        key=lambda x: _size(x[0]),
        reverse=True,
    )
    left: Placed | None = None
    for pod, placed in replicas:
        node = next(
            (i for i in range(nodes) if _fits(pod, free[i]) and not (pod.one_per_node and pod.name in holds[i])), None
        )
        if node is None:
            left = left or placed
            continue
        free[node] = Allocatable(
            free[node].cpu_millicores - pod.requests.cpu_millicores, free[node].memory_mib - pod.requests.memory_mib
        )
        holds[node].add(pod.name)
    placed_pods = tuple(p for p, _ in replicas)
    requested = Allocatable(_total(ds).cpu_millicores * nodes, _total(ds).memory_mib * nodes) + _total(placed_pods)
    largest = max(placed_pods, key=_size, default=None)
    misfit = None
    if left is not None:
        misfit = (
            f"{_describe(left.pod)} does not fit the {nodes} x {instance_type} {group.name} nodes beside the others "
            f"({per_node.cpu_millicores}m, {per_node.memory_mib} MiB allocatable per node; DaemonSets "
            f"{_total(ds).cpu_millicores}m per node; {requested.cpu_millicores}m requested in all); use a larger "
            "instance type or more nodes (desiredSize)"
        )
    all_nodes = Allocatable(per_node.cpu_millicores * nodes, per_node.memory_mib * nodes)
    return GroupFit(group, instance_type, nodes, all_nodes, ds, placed_pods, requested, largest, misfit), left


def _pool_fit(group: NodeGroup, pods: list[PodShape], all_daemonsets: tuple[PodShape, ...]) -> GroupFit:
    """A pool: per node of its smallest type; every pod must fit one node of some type of the pool."""
    largest = max(pods, key=_size, default=None)
    misfit = None
    for pod in sorted(pods, key=_size, reverse=True):
        room = [
            group.allocatable(t) + Allocatable(-_total(ds).cpu_millicores, -_total(ds).memory_mib)
            for t in group.instance_types
            for ds in [_group_daemonsets(group, t, all_daemonsets)]
        ]
        if not any(_fits(pod, free) for free in room):
            best = max(room, key=lambda a: (a.cpu_millicores, a.memory_mib))
            misfit = (
                f"{_describe(pod)} fits no node of {group.name} (at most {best.cpu_millicores}m and "
                f"{best.memory_mib} MiB free on one node after its DaemonSets); add a larger instance type"
            )
            break
    instance_type = group.smallest
    ds = _group_daemonsets(group, instance_type, all_daemonsets)
    return GroupFit(
        group, instance_type, 1, group.allocatable(instance_type), ds, tuple(pods), _total(ds), largest, misfit
    )


def group_fits(settings: StackSettings) -> tuple[GroupFit, ...]:
    """Every node group's fit, in `node_groups` order, and (key, message) of the first pod that fits nowhere."""
    return _place(settings)[0]


def _place(settings: StackSettings) -> tuple[tuple[GroupFit, ...], tuple[str, str] | None]:
    groups = node_groups(settings)
    all_ds = daemonsets(settings)
    on_group: dict[str, list[Placed]] = {group.name: [] for group in groups}
    nowhere: tuple[str, str] | None = None
    for placed in workloads(settings):
        takers = [g for g in groups if pod_requests.can_run(placed.pod, _node_labels(g, g.smallest), g.taints)]
        fixed = [g for g in takers if g.fixed_nodes is not None]
        if not takers:
            nowhere = nowhere or (placed.key, f"{_describe(placed.pod)} can run on no node group of this stack")
        for group in fixed[:1] or takers:
            on_group[group.name].append(placed)
    fits: list[GroupFit] = []
    for group in groups:
        if group.fixed_nodes is not None:
            fit, _ = _pack(group, on_group[group.name], all_ds)
        else:
            fit = _pool_fit(group, [p.pod for p in on_group[group.name]], all_ds)
        fits.append(fit)
    return tuple(fits), nowhere


def check(settings: StackSettings) -> None:
    """ValueError("<key>: ...") naming the group's key when a pod the plan runs fits nowhere."""
    fits, nowhere = _place(settings)
    for fit in fits:
        if fit.misfit is not None:
            raise ValueError(f"{fit.group.key}: {fit.misfit}")
    if nowhere is not None:
        raise ValueError(f"{nowhere[0]}: {nowhere[1]}")
    cpu = settings.karpenter.cpu_user_pool
    if settings.cpu_user_pool_enabled:
        need = min(gpu_catalog.vcpus(t) for t in cpu.instance_types)
        if cpu.cpu_limit < need:
            raise ValueError(
                f"karpenter.cpuUserPool.cpuLimit: {cpu.cpu_limit} vCPUs cannot hold one node of its smallest type "
                f"({need} vCPUs); raise it"
            )
