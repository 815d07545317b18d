"""Packing: the MostAllocated NodeResourcesFit transform on pulumi-eks's aws.eks.Cluster, its switch and summary."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pytest

from components.facts import constants
from components.resources import scheduler_scoring
from components.settings.checks.fit_placement import group_fits
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.summary import render_summary
from tests.conftest import registered_transforms
from tests.support.settings import config_for, settings_for

EKS_COMPONENT = "eks:index:Cluster"


def _transform_args(type_: str) -> pulumi.ResourceTransformArgs:
    return pulumi.ResourceTransformArgs(
        custom=True, type_=type_, name="c", props={"name": "c"}, opts=pulumi.ResourceOptions()
    )


def test_transform_sets_most_allocated_scoring_on_the_eks_cluster_only() -> None:
    result = scheduler_scoring.pack_scheduling(_transform_args("aws:eks/cluster:Cluster"))
    # Hand-written: pulumi-aws 7.51.1 ClusterKubeSchedulerConfig -> nodeResourcesFit -> scoringStrategy.
    assert result is not None and result.props == {
        "name": "c",
        "kubeSchedulerConfig": {
            "nodeResourcesFit": {
                "scoringStrategy": {
                    "type": "MostAllocated",
                    "resources": [
                        {"name": "nvidia.com/gpu", "weight": 5},
                        {"name": "cpu", "weight": 1},
                        {"name": "memory", "weight": 1},
                    ],
                }
            }
        },
    }
    for other in ("aws:eks/nodeGroup:NodeGroup", "aws:iam/role:Role", "eks:index:Cluster"):
        assert scheduler_scoring.pack_scheduling(_transform_args(other)) is None


def test_the_input_names_are_the_sdks() -> None:
    # The camelCase names the provider receives are the SDK's own getter names.
    from pulumi_aws.eks import _inputs

    source = Path(_inputs.__file__).read_text()
    for getter in ("nodeResourcesFit", "scoringStrategy"):
        assert f'@pulumi.getter(name="{getter}")' in source
    assert "Valid values are `LeastAllocated` and `MostAllocated`" in source
    cluster_source = Path(_inputs.__file__).with_name("cluster.py").read_text()
    assert '@pulumi.getter(name="kubeSchedulerConfig")' in cluster_source


def test_weights_are_within_the_apis_range() -> None:
    assert all(1 <= weight <= 100 for _, weight in constants.SCORING_WEIGHTS)


@pytest.mark.usefixtures("reset_runtime")
@pytest.mark.parametrize("on", [True, False])
def test_the_cluster_component_carries_the_transform_when_switched_on(on: bool) -> None:
    transforms = registered_transforms(
        config_for("staging", merge={"cluster": {"mostAllocatedScoring": on}}), EKS_COMPONENT
    )
    assert transforms == {"cluster-eks": int(on)}


def test_switch_is_on_by_default() -> None:
    assert settings_for("staging").cluster.scoring_strategy == "MostAllocated"


@pytest.mark.parametrize(("on", "shown"), [(True, "MostAllocated"), (False, "LeastAllocated")])
def test_summary_says_which_scoring_runs(staging_plan: Plan, on: bool, shown: str) -> None:
    settings = settings_for("staging", merge={"cluster": {"mostAllocatedScoring": on}})
    summary = render_summary(
        settings, staging_plan, "staging", Path("out"), stack_forecast(settings), group_fits(settings)
    )
    line = next(line for line in summary.splitlines() if line.startswith("Scheduler scoring"))
    assert f": {shown};" in line
    assert ("aws:eks/cluster:Cluster" in line) is on
