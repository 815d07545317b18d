"""The Karpenter component under per-test mocks, in process: its outputs, its children, the off switch."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from components.settings import StackSettings, load_settings
from offline.config_files import read_stack_config
from offline.mocks import RecordingMonitor
from offline.runner import install_mocks
from tests.conftest import PROJECT_DIR, STACKS, run_program
from tests.support.settings import config_for

KARPENTER = "gpu-platform:karpenter:Karpenter"


def _install(stack: str, **edits: Any) -> tuple[StackSettings, RecordingMonitor]:
    """`stack` with `settings_for`'s edits, and the mocks installed with that config."""
    config = read_stack_config(PROJECT_DIR, stack)
    values = config_for(stack, **edits)
    settings = load_settings(values)
    return settings, install_mocks(config.project, stack, settings.region, values, list(config.secret_keys))


@pytest.mark.usefixtures("reset_runtime")
@pytest.mark.parametrize("stack", STACKS)
def test_component_outputs_and_children(stack: str) -> None:
    settings, monitor = _install(stack)
    checked: list[str] = []

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        karpenter = run_program()["karpenter"]

        def verify(values: list[Any]) -> None:
            queue_name, controller_arn, node_role_name = values
            assert queue_name == settings.cluster_name
            assert controller_arn.endswith(f":role/{settings.cluster_name}-karpenter-controller")
            assert node_role_name == f"{settings.cluster_name}-karpenter-node"
            checked.append(queue_name)

        return pulumi.Output.all(
            karpenter.interruption_queue.name, karpenter.controller_role.arn, karpenter.node_role.name
        ).apply(verify)

    program()
    assert checked == [settings.cluster_name], "the Output assertions ran"
    (component,) = [r for r in monitor.registrations if r.type == KARPENTER]
    children = [r for r in monitor.registrations if f"{KARPENTER}$" in r.urn]
    assert children and all(r.parent == component.urn for r in children), "every child has parent=self"
    kubernetes_children = [r for r in children if r.type.startswith("kubernetes:")]
    assert kubernetes_children and all(r.provider for r in kubernetes_children if r.custom or r.remote)


@pytest.mark.usefixtures("reset_runtime")
def test_disabled_karpenter_registers_nothing() -> None:
    # Staging's GPU capacity is all Karpenter: without it the demo needs the managed group back, and the lab's
    # timetable (it warms a Karpenter pool) goes. Only the switch: pools or replicas next to `enabled: false` are
    # rejected as ignored settings.
    _, monitor = _install(
        "staging",
        karpenter={"enabled": False},
        gpuNodeGroup={"enabled": True, "minSize": 1, "desiredSize": 1},
        labs_without=("sessions", "hub"),
    )

    @pulumi.runtime.test
    def program() -> None:
        namespace = run_program()
        assert "karpenter" not in namespace

    program()
    types = {r.type for r in monitor.registrations}
    assert "gpu-platform:cluster:Cluster" in types, "the rest of the program still ran"
    assert KARPENTER not in types
    assert not any(t.startswith(("kubernetes:karpenter", "kubernetes:helm.sh")) for t in types)
    assert not any("karpenter" in r.name for r in monitor.registrations)
