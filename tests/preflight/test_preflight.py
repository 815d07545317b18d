"""The deploy preflight's decision: public path (egress IP in publicAccessCidrs) or private path (the endpoint
resolves to private addresses and accepts TCP 443); injected egress IPs, resolvers and connectors, no network.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
import yaml

import preflight
from components.settings import StackSettings
from tests.conftest import PROJECT_DIR
from tests.support.settings import settings_for

STAGING = settings_for("staging")
ENDPOINT = "https://ABCDEF0123456789.gr7.us-west-1.eks.amazonaws.com"
HOST = "ABCDEF0123456789.gr7.us-west-1.eks.amazonaws.com"
INSIDE = "203.0.113.7"  # in staging's publicAccessCidrs 203.0.113.0/24
OUTSIDE = "192.0.2.50"


def _no_lookup(host: str) -> Sequence[str]:
    raise AssertionError(f"the public path or a first deploy must not resolve {host}")


def _no_connect(host: str, port: int) -> bool:
    raise AssertionError(f"the public path or a first deploy must not connect to {host}:{port}")


def _resolves_to(*addresses: str) -> preflight.Resolver:
    return lambda host: list(addresses) if host == HOST else []


def _connects(result: bool) -> preflight.Connector:
    return lambda host, port: result and host == HOST and port == 443


def _without_public_endpoint(settings: StackSettings) -> StackSettings:
    return settings.model_copy(
        update={"cluster": settings.cluster.model_copy(update={"endpoint_public_access": False})}
    )


def test_staging_cidrs_are_the_ones_these_tests_assume() -> None:
    assert preflight.egress_in_cidrs(INSIDE, STAGING.cluster.public_access_cidrs)
    assert not preflight.egress_in_cidrs(OUTSIDE, STAGING.cluster.public_access_cidrs)
    assert not preflight.egress_in_cidrs(None, STAGING.cluster.public_access_cidrs)


def test_first_deploy_from_an_allowed_egress_ip_passes() -> None:
    verdict = preflight.decide(STAGING, "staging", INSIDE, None, _no_lookup, _no_connect)
    assert verdict.reachable, verdict.message


def test_first_deploy_from_a_hosted_runner_fails_naming_the_settings() -> None:
    verdict = preflight.decide(STAGING, "staging", OUTSIDE, None, _no_lookup, _no_connect)
    assert not verdict.reachable
    for needle in (
        "first deploy",
        OUTSIDE,
        f"{OUTSIDE}/32",
        preflight.CIDRS_KEY,
        "Pulumi.staging.yaml",
        "DEPLOY_RUNNER",
    ):
        assert needle in verdict.message, verdict.message


def test_first_deploy_with_an_unknown_egress_ip_fails() -> None:
    verdict = preflight.decide(STAGING, "staging", None, None, _no_lookup, _no_connect)
    assert not verdict.reachable
    assert "egress IP unknown" in verdict.message


def test_existing_cluster_through_the_public_endpoint_needs_no_connection() -> None:
    verdict = preflight.decide(STAGING, "staging", INSIDE, ENDPOINT, _resolves_to("52.8.1.2"), _no_connect)
    assert verdict.reachable


def test_inside_the_vpc_the_private_path_decides_even_with_an_allowed_egress_ip() -> None:
    """A NAT egress IP inside publicAccessCidrs does not help a runner that resolves the endpoint privately and
    that the cluster security group refuses: it talks to the private address (issue 17, reach edge case 1)."""
    verdict = preflight.decide(STAGING, "staging", INSIDE, ENDPOINT, _resolves_to("10.20.3.4"), _connects(False))
    assert not verdict.reachable
    assert "does not connect" in verdict.message and "security group" in verdict.message


@pytest.mark.parametrize("address", ["100.64.0.10", "100.127.255.1"])
def test_a_vpc_in_the_shared_address_space_counts_as_private(address: str) -> None:
    """RFC 6598 100.64.0.0/10 is not `is_private` in Python, but VPCs use it (issue 17, reach edge case 2)."""
    verdict = preflight.decide(STAGING, "staging", OUTSIDE, ENDPOINT, _resolves_to(address), _connects(True))
    assert verdict.reachable, verdict.message
    assert not preflight.is_private_address("100.128.0.1")


def test_in_vpc_runner_reaches_the_private_endpoint() -> None:
    verdict = preflight.decide(STAGING, "staging", OUTSIDE, ENDPOINT, _resolves_to("10.20.3.4"), _connects(True))
    assert verdict.reachable, verdict.message
    assert "10.20.3.4" in verdict.message


def test_public_answers_from_dns_mean_the_runner_is_outside_the_vpc() -> None:
    verdict = preflight.decide(STAGING, "staging", OUTSIDE, ENDPOINT, _resolves_to("52.8.1.2"), _connects(True))
    assert not verdict.reachable
    assert "no private address" in verdict.message and preflight.CIDRS_KEY in verdict.message


def test_private_answers_that_do_not_connect_fail() -> None:
    verdict = preflight.decide(STAGING, "staging", OUTSIDE, ENDPOINT, _resolves_to("10.20.3.4"), _connects(False))
    assert not verdict.reachable
    assert "does not connect" in verdict.message


def test_without_a_public_endpoint_an_allowed_ip_is_not_enough() -> None:
    private_only = _without_public_endpoint(STAGING)
    first = preflight.decide(private_only, "staging", INSIDE, None, _no_lookup, _no_connect)
    assert not first.reachable
    assert preflight.PUBLIC_ACCESS_KEY in first.message
    later = preflight.decide(private_only, "staging", INSIDE, ENDPOINT, _resolves_to("10.20.3.4"), _connects(True))
    assert later.reachable


def test_main_exit_codes_and_message(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(preflight.Aws, "run", lambda self, *args, **kwargs: {})
    monkeypatch.setattr(preflight, "describe_endpoint", lambda aws, name: None)
    monkeypatch.setattr(preflight, "fetch_egress_ip", lambda: OUTSIDE)
    assert preflight.main(["--stack", "staging", "--check", "reach"]) == 1
    assert "reach: FAILED" in capsys.readouterr().out
    monkeypatch.setattr(preflight, "fetch_egress_ip", lambda: INSIDE)
    assert preflight.main(["--stack", "staging", "--check", "reach"]) == 0
    assert preflight.main(["--stack", "no-such-stack"]) == 2


def test_every_network_step_is_bounded_well_inside_a_minute() -> None:
    # egress lookup + describe-cluster (2 steps) + DNS + TCP connect
    assert preflight.STEP_TIMEOUT_SECONDS * 5 < 60


# --- the workflows run it ---------------------------------------------------------------------------


def _workflow(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((PROJECT_DIR / ".github" / "workflows" / f"{name}.yml").read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", ["deploy", "preview"])
def test_every_pulumi_job_runs_on_the_configurable_runner_after_the_preflight(name: str) -> None:
    jobs = [job for job in _workflow(name)["jobs"].values() if "steps" in job]
    pulumi_jobs = [
        job for job in jobs if any(str(s.get("uses", "")).startswith("pulumi/actions@") for s in job["steps"])
    ]
    assert pulumi_jobs
    for job in pulumi_jobs:
        assert job["runs-on"] == "${{ vars.DEPLOY_RUNNER || 'ubuntu-24.04' }}"
        steps = job["steps"]
        (preflight_at,) = [i for i, s in enumerate(steps) if "preflight.py --stack" in s.get("run", "")]
        credentials_at = next(i for i, s in enumerate(steps) if "configure-aws-credentials" in str(s.get("uses", "")))
        pulumi_at = [i for i, s in enumerate(steps) if "pulumi/" in str(s.get("uses", ""))]
        assert credentials_at < preflight_at < min(pulumi_at)
        assert steps[preflight_at]["timeout-minutes"] <= 2
