"""The fit model (components/settings/checks/fit.py, fit_placement.py, facts/pod_requests.py): Karpenter's allocatable
arithmetic against hand-computed figures, the system group's packing, the scheduler's toleration rule, and both
shipped stacks fitting with learners' notebooks off the system nodes."""

from __future__ import annotations

import itertools
import math

import pytest

from components.facts import node_allocatable, pod_requests
from components.facts.constants import GPU_TAINT, USER_TAINT
from components.facts.node_allocatable import NO_REQUEST, Allocatable
from components.facts.pod_requests import PodShape
from components.settings import SettingsError, StackSettings, load_settings
from components.settings.checks.fit import NodeGroup, daemonsets, node_groups
from components.settings.checks.fit_placement import check, group_fits, pack
from tests.conftest import STACKS
from tests.support.config_edits import merged, with_value
from tests.support.k8s_validation import tolerates as k8s_tolerates
from tests.support.settings import settings_for


@pytest.fixture(scope="module")
def settings() -> dict[str, StackSettings]:
    return {stack: settings_for(stack) for stack in STACKS}


# --- the arithmetic, by hand ----------------------------------------------------------------------------


def test_an_m6i_large_offers_what_karpenter_computes_by_hand() -> None:
    """2 vCPUs, 8 GiB, 110 pods: kube-reserved 6% of the first core + 1% of the second = 70m; memory 8192 MiB
    less the VM overhead ceil(7.5%) = 615, kube-reserved 11 x 110 + 255 = 1465 and the 100 MiB eviction threshold."""
    got = node_allocatable.pod_allocatable("m6i.large", max_pods=110, daemonsets=NO_REQUEST)
    assert got == Allocatable(2000 - 60 - 10, 8192 - math.ceil(8192 * 0.075) - (11 * 110 + 255) - 100)
    assert got == Allocatable(1930, 6012)


def test_staging_system_group_figures_by_hand(settings: dict[str, StackSettings]) -> None:
    """2 x m6i.large. Per node the DaemonSets kube-proxy 100m/50Mi, aws-node 50m, the CloudWatch agent 250m/128Mi,
    the node monitoring agent 10m/30Mi, the EBS CSI node pod 30m/120Mi (440m/328Mi); then 2 Karpenter controllers
    1000m/1Gi, the hub and the proxy 100m/256Mi each (`<lab>-hub`'s LimitRange default), 2 CoreDNS 100m/70Mi, the
    CloudWatch operator 100m/64Mi, one timetable job 50m/64Mi, 2 EBS CSI controllers 50m/200Mi; the EFS controllers 0."""
    (system,) = [fit for fit in group_fits(settings["staging"]) if fit.group.name == "system"]
    assert (system.instance_type, system.nodes) == ("m6i.large", 2)
    assert system.allocatable == Allocatable(2 * 1930, 2 * 6012)
    daemonsets_per_node = Allocatable(100 + 50 + 250 + 10 + 30, 50 + 128 + 30 + 120)
    pods = Allocatable(
        2 * 1000 + 2 * 100 + 2 * 100 + 100 + 50 + 2 * 50, 2 * 1024 + 2 * 256 + 2 * 70 + 64 + 64 + 2 * 200
    )
    assert system.requested == Allocatable(2 * 440, 2 * 328) + pods == Allocatable(3530, 3884)
    assert sum((ds.requests for ds in system.daemonsets), NO_REQUEST) == daemonsets_per_node
    assert system.free == Allocatable(330, 8140)
    assert system.most_free_on_a_node == Allocatable(290, 4332)
    assert system.largest is not None and system.largest.name == "karpenter" and system.misfit is None


def _group(nodes: int) -> NodeGroup:
    return NodeGroup("system", "systemNodes.instanceTypes", ("m6i.large",), {"role": "system"}, (), 110, nodes, True)


def _pod(name: str, cpu: int, *, count: int = 1, one_per_node: bool = False) -> PodShape:
    return PodShape(name, Allocatable(cpu, 100), "test", count=count, one_per_node=one_per_node)


def test_packing_puts_one_per_node_pods_on_distinct_nodes_and_reports_the_first_left_over() -> None:
    """1930m per node: two 1000m one-per-node pods take a node each (930m left each); a third cannot go on
    either (one per node), nor can a 1000m pod without that rule (930m < 1000m). Two 900m pods do fit."""
    fits = pack(_group(2), [_pod("ctl", 1000, count=2, one_per_node=True), _pod("small", 900, count=2)], ())
    assert fits.misfit is None and fits.free == Allocatable(2 * 1930 - 3800, 2 * 6012 - 400)
    third = pack(_group(2), [_pod("ctl", 1000, count=3, one_per_node=True)], ())
    assert third.misfit is not None and third.misfit.startswith("ctl (1000m, 100 MiB; test) does not fit")
    big = pack(_group(2), [_pod("ctl", 1000, count=2, one_per_node=True), _pod("big", 1000)], ())
    assert big.misfit is not None and "big (1000m" in big.misfit and "most free on one node 930m" in big.misfit
    assert pack(_group(3), [_pod("ctl", 1000, count=2, one_per_node=True), _pod("big", 1000)], ()).misfit is None


def _daemonset(cpu: int) -> PodShape:
    return PodShape("ds", Allocatable(cpu, 0), "test", daemonset=True, tolerations=pod_requests.TOLERATE_ALL)


def test_packing_counts_daemonsets_on_every_node() -> None:
    """1930m - 930m of DaemonSets leaves exactly 1000m on each node; at 931m a 1000m pod fits neither."""
    fit = pack(_group(2), [_pod("p", 1000)], (_daemonset(930),))
    assert fit.misfit is None and fit.requested == Allocatable(2 * 930 + 1000, 100)
    assert fit.free == Allocatable(2 * 1930 - 2 * 930 - 1000, 2 * 6012 - 100)
    assert pack(_group(2), [_pod("p", 1000)], (_daemonset(931),)).misfit is not None


# --- the scheduler's rules ---------------------------------------------------------------------------------

TAINTS = [dict(GPU_TAINT), dict(USER_TAINT), {"key": "CriticalAddonsOnly", "value": "", "effect": "NoSchedule"}]
TOLERATIONS = [
    {"operator": "Exists"},
    {"key": "nvidia.com/gpu", "operator": "Exists"},
    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    {"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"},
    {"key": "hub.jupyter.org/dedicated", "operator": "Equal", "value": "user", "effect": "NoSchedule"},
    {"key": "hub.jupyter.org/dedicated", "operator": "Equal", "value": "core", "effect": "NoSchedule"},
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"operator": "Exists", "effect": "NoExecute"},
]


def test_the_models_toleration_rule_is_the_tests_independent_one() -> None:
    for toleration, taint in itertools.product(TOLERATIONS, TAINTS):
        assert pod_requests.tolerates((toleration,), taint) == k8s_tolerates(toleration, taint), (toleration, taint)


def test_user_pool_takes_only_the_cpu_notebook_and_tolerating_daemonsets(settings: dict[str, StackSettings]) -> None:
    for stack in STACKS:
        fits = {fit.group.name: fit for fit in group_fits(settings[stack])}
        user = fits[settings[stack].karpenter.cpu_user_pool.name]
        assert [pod.name for pod in user.pods] == ["notebook (cpu profile)"] * len(user.pods) and user.pods
        assert all(ds.tolerations == pod_requests.TOLERATE_ALL for ds in user.daemonsets)
        # No learner's notebook on the system nodes; the hub and the proxy stay there.
        system = [pod.name for pod in fits["system"].pods]
        assert not [name for name in system if "notebook" in name] and {"hub", "proxy"} <= set(system)


def test_gpu_groups_run_the_daemonsets_the_capacity_model_reserves(settings: dict[str, StackSettings]) -> None:
    """The fit model places DaemonSets by their terms; the capacity model (warm slots, profiles) sums a fixed list:
    both agree on every GPU group of both stacks (the EFS node plugin asks for nothing)."""
    for stack in STACKS:
        config = settings[stack]
        for group in node_groups(config):
            if dict(GPU_TAINT) not in group.taints:
                continue
            pool = next(p for p in config.karpenter.node_pools if p.name == group.name)
            sharing = config.resolved.pool(pool.name).sharing
            labels = {**group.labels, "node.kubernetes.io/instance-type": group.smallest}
            placed = [ds for ds in daemonsets(config) if pod_requests.can_run(ds, labels, group.taints)]
            expected = node_allocatable.daemonset_requests(
                gpu_metrics=config.observability.gpu_metrics,
                node_repair=config.observability.node_repair,
                mps=sharing.strategy == "mps",
                ebs_csi=config.ebs_csi_driver_enabled,
            )
            assert sum((ds.requests for ds in placed), NO_REQUEST) == expected, (stack, group.name)


# --- both stacks fit; a config that does not is refused at its key ---------------------------------------


def test_both_shipped_stacks_fit(settings: dict[str, StackSettings]) -> None:
    for stack in STACKS:
        check(settings[stack])
        assert all(fit.misfit is None and fit.free.cpu_millicores >= 0 for fit in group_fits(settings[stack]))


def test_a_user_pool_too_small_for_the_cpu_notebook_is_refused_at_its_key(
    stack_configs: dict[str, dict[str, str]],
) -> None:
    """c6i.large: 4 GiB; 4096 - 308 - 1465 - 100 = 2223 MiB, less 328 MiB of DaemonSets = 1895 < 2048 MiB. The
    command line's exit 2 (no traceback, no resources.json) is the corpus case `cpu-user-pool-too-small`."""
    for stack in STACKS:
        config = merged(
            stack_configs[stack], "gpu-platform:karpenter", {"cpuUserPool": {"instanceTypes": ["c6i.large"]}}
        )
        with pytest.raises(SettingsError) as raised:
            load_settings(config)
        assert [path for path, _ in raised.value.problems] == ["gpu-platform:karpenter.cpuUserPool.instanceTypes"]
        assert "notebook (cpu profile) (500m, 2048 MiB" in str(raised.value) and "1895 MiB free" in str(raised.value)
        # One size up (8 GiB) holds it.
        config = merged(
            stack_configs[stack], "gpu-platform:karpenter", {"cpuUserPool": {"instanceTypes": ["m6i.large"]}}
        )
        check(load_settings(config))


def test_a_stack_without_hubs_has_no_user_pool(stack_configs: dict[str, dict[str, str]]) -> None:
    config = load_settings(with_value(stack_configs["prod"], "gpu-platform:labs", []))
    assert not config.cpu_user_pool_enabled
    assert [group.name for group in node_groups(config)] == ["system", "t4-shared", "a10g-inference", "l4-slice"]
