"""EC2 vCPU quota a stack needs at its GPU limits (`ResolvedStack.quota_needs`): the formula on worked examples,
the synth summary printing it, and docs/lifecycle.md telling a fresh account how to check quota and offerings.
"""

from __future__ import annotations

from pathlib import Path

from components.facts.gpu_catalog import vcpus
from components.settings import QuotaNeed, StackSettings
from components.settings.checks.fit_placement import group_fits
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.summary import render_summary
from tests.conftest import PROJECT_DIR
from tests.support.settings import settings_for

LIFECYCLE = (PROJECT_DIR / "docs" / "lifecycle.md").read_text(encoding="utf-8")
ON_DEMAND_G = ("L-DB2E81BA", "Running On-Demand G and VT instances")


def _quota_needs(settings: StackSettings) -> list[QuotaNeed]:
    return list(settings.resolved.quota_needs)


def test_vcpus_of_the_catalog_sizes() -> None:
    assert [vcpus(t) for t in ("g4dn.xlarge", "g4dn.12xlarge", "g4dn.metal", "g5.48xlarge")] == [4, 48, 96, 192]


def test_gpu_limit_binds_before_cpu_limit() -> None:
    """8 GPUs of g4dn.xlarge (4 vCPUs per GPU) = 32 vCPUs < cpuLimit 96; plus 2 managed g4dn.2xlarge = 16."""
    pool = {"name": "t4", "instanceTypes": ["g4dn.xlarge"], "gpuLimit": 8, "cpuLimit": 96}
    group = {"enabled": True, "instanceTypes": ["g4dn.2xlarge"], "minSize": 1, "desiredSize": 1, "maxSize": 2}
    settings = settings_for(
        "staging", merge={"gpuNodeGroup": group}, karpenter={"enabled": True, "replicas": 2, "nodePools": [pool]}
    )
    assert _quota_needs(settings) == [QuotaNeed(*ON_DEMAND_G, vcpus=32 + 16)]


def test_cpu_limit_binds_on_vcpu_heavy_types() -> None:
    """g4dn.16xlarge has 64 vCPUs per GPU: 4 GPUs would be 256 vCPUs, capped by cpuLimit 100."""
    pool = {"name": "t4", "instanceTypes": ["g4dn.xlarge", "g4dn.16xlarge"], "gpuLimit": 4, "cpuLimit": 100}
    settings = settings_for(
        "staging",
        merge={"gpuNodeGroup": {"enabled": False}},
        karpenter={"enabled": True, "replicas": 2, "nodePools": [pool]},
    )
    assert _quota_needs(settings) == [QuotaNeed(*ON_DEMAND_G, vcpus=100)]


def test_spot_and_p_families_count_against_their_own_quotas() -> None:
    pools = [
        {"name": "spot", "instanceTypes": ["g5.xlarge"], "capacityTypes": ["spot"], "gpuLimit": 2, "cpuLimit": 64},
        {"name": "h100", "instanceTypes": ["p5.48xlarge"], "gpuLimit": 8, "cpuLimit": 192},
    ]
    settings = settings_for(
        "staging",
        merge={"gpuNodeGroup": {"enabled": False}},
        karpenter={"enabled": True, "replicas": 2, "nodePools": pools},
    )
    assert {need.code: need.vcpus for need in _quota_needs(settings)} == {"L-3819A6DF": 8, "L-417A185B": 192}


def test_the_synth_summary_prints_the_quota(staging_plan: Plan, prod_plan: Plan) -> None:
    for stack, plan in (("staging", staging_plan), ("prod", prod_plan)):
        settings = settings_for(stack)
        summary = render_summary(settings, plan, stack, Path("out"), stack_forecast(settings), group_fits(settings))
        (need,) = _quota_needs(settings)
        assert need.code == ON_DEMAND_G[0]
        (line,) = [line for line in summary.splitlines() if need.code in line]
        assert ON_DEMAND_G[1] in line and f"{need.vcpus} vCPUs" in line


def test_the_lifecycle_one_time_setup_lists_what_a_fresh_account_needs() -> None:
    setup = LIFECYCLE.split("## 1. One-time setup", 1)[1].split("\n## ", 1)[0]
    for needle in (
        "Running On-Demand G and VT instances",
        "aws service-quotas get-service-quota --service-code ec2 --quota-code L-DB2E81BA",
        "aws ec2 describe-instance-type-offerings --location-type availability-zone",
        "cpuLimit",
        "gpuLimit",
        "DEPLOY_RUNNER",
        "preflight.py",
    ):
        assert needle in setup, needle
