"""The preflight's AWS questions, answered by a fake `aws` executable on PATH (a script this test writes).

The fake answers each command from a JSON table the test sets (`FAKE_AWS_ANSWERS`): the longest matching
argument prefix wins; it also logs every call, so the tests see what was asked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import preflight
from components.facts.constants import CLOUDWATCH_OBSERVABILITY_ADDON, CLOUDWATCH_OBSERVABILITY_ADDON_VERSION
from offline.plan import Plan
from tests.support import fake_aws as fake_aws_cli
from tests.support.settings import settings_for

STAGING = settings_for("staging")
# The EC2 vCPU quotas staging needs, as the synth summary and preflight work them out.
STAGING_NEEDS = STAGING.resolved.quota_needs
DEPLOYER = "arn:aws:iam::111122223333:role/github-actions-deploy"
ADMIN = "arn:aws:iam::111122223333:role/platform-admin"
PREVIEW = "arn:aws:iam::111122223333:role/github-actions-preview"
NOT_FOUND = "An error occurred (ResourceNotFoundException) when calling the DescribeCluster operation: No cluster"


def _addon_versions(*versions: str, addon: str = CLOUDWATCH_OBSERVABILITY_ADDON) -> dict[str, Any]:
    return {"stdout": {"addons": [{"addonName": addon, "addonVersions": [{"addonVersion": v} for v in versions]}]}}


BASE_ANSWERS: dict[str, Any] = {
    "sts get-caller-identity": fake_aws_cli.assumed(DEPLOYER),
    "eks describe-cluster": {"rc": 254, "stderr": NOT_FOUND},
    "eks describe-addon-versions": {"stdout": {"addons": []}},
    # Every add-on staging pins is published (the CloudWatch add-on with a newer build beside it).
    **{
        f"eks describe-addon-versions --addon-name {name}": _addon_versions(version, addon=name)
        for name, version in preflight.pinned_addons(STAGING)
    },
    f"eks describe-addon-versions --addon-name {CLOUDWATCH_OBSERVABILITY_ADDON}": _addon_versions(
        CLOUDWATCH_OBSERVABILITY_ADDON_VERSION, "v6.6.0-eksbuild.1"
    ),
    "service-quotas get-service-quota": {"stdout": {"Quota": {"QuotaCode": "L-DB2E81BA", "Value": 256.0}}},
}


@pytest.fixture
def fake_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def answer(**overrides: Any) -> Path:
        return fake_aws_cli.install(tmp_path, monkeypatch, {**BASE_ANSWERS, **overrides})

    return answer


def _run(checks: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = preflight.main(["--stack", "staging", "--check", checks])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_addon_version_present(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    log = fake_aws()
    code, out = _run("addons", capsys)
    assert code == 0, out
    assert f"{CLOUDWATCH_OBSERVABILITY_ADDON} {CLOUDWATCH_OBSERVABILITY_ADDON_VERSION} is published" in out
    asked = log.read_text().splitlines()
    expected = (
        f"eks describe-addon-versions --addon-name {CLOUDWATCH_OBSERVABILITY_ADDON} --kubernetes-version "
        f"{STAGING.kubernetes_version} --region {STAGING.region} --output json"
    )
    assert expected in asked
    assert "asked: aws eks describe-addon-versions" in out


def test_addon_version_absent_names_the_versions_that_exist(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fake_aws(
        **{
            "eks describe-addon-versions --addon-name amazon-cloudwatch-observability": _addon_versions(
                "v6.3.0-eksbuild.1", "v6.6.0-eksbuild.1"
            )
        }
    )
    code, out = _run("addons", capsys)
    assert code == 1
    assert "addons: FAILED" in out and CLOUDWATCH_OBSERVABILITY_ADDON_VERSION in out
    assert "v6.3.0-eksbuild.1, v6.6.0-eksbuild.1" in out and "components/facts/constants.py" in out


def test_quota_above_what_the_stack_uses(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    log = fake_aws()
    code, out = _run("quotas", capsys)
    assert code == 0, out
    for need in STAGING_NEEDS:
        assert f"--quota-code {need.code}" in log.read_text()
        assert f"{need.code} ({need.name}) allows 256 vCPUs; the stack can use {need.vcpus}" in out


def test_quota_below_names_code_numbers_and_the_request_command(
    fake_aws: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_aws(**{"service-quotas get-service-quota": {"stdout": {"Quota": {"Value": 8.0}}}})
    code, out = _run("quotas", capsys)
    assert code == 1
    (need,) = STAGING_NEEDS
    assert f"{need.code} ({need.name}) allows 8 vCPUs, below the {need.vcpus}" in out
    assert (
        f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {need.code} "
        f"--desired-value {need.vcpus} --region {STAGING.region}"
    ) in out


def test_first_deploy_by_a_listed_admin_collides(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fake_aws(**{"sts get-caller-identity": fake_aws_cli.assumed(ADMIN)})
    code, out = _run("caller", capsys)
    assert code == 1
    assert "gpu-platform:cluster.adminPrincipalArns[0]" in out and "gpu-platform:cluster.deployerPrincipalArn" in out
    assert "409" in out and ADMIN in out


def test_first_deploy_by_the_listed_viewer_collides_too(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fake_aws(**{"sts get-caller-identity": fake_aws_cli.assumed(PREVIEW)})
    code, out = _run("caller", capsys)
    assert code == 1 and "gpu-platform:cluster.viewerPrincipalArns[0]" in out


def test_an_admin_is_fine_once_the_cluster_exists(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    endpoint = {"stdout": {"cluster": {"endpoint": "https://ABC.gr7.us-west-1.eks.amazonaws.com"}}}
    fake_aws(**{"sts get-caller-identity": fake_aws_cli.assumed(ADMIN), "eks describe-cluster": endpoint})
    code, out = _run("caller", capsys)
    assert code == 0, out
    assert "exists" in out and "collides with nothing" in out


def test_first_deploy_by_the_deployer_passes(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    fake_aws()
    code, out = _run("caller", capsys)
    assert code == 0 and "first deploy by gpu-platform:cluster.deployerPrincipalArn" in out


def test_cli_missing_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out = _run("addons", capsys)
    assert code == 1
    assert "the AWS CLI (`aws`) is not on PATH" in out and "Traceback" not in out


def test_bad_credentials_are_a_clear_error(fake_aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    error = "An error occurred (ExpiredToken) when calling the GetCallerIdentity operation: token expired"
    fake_aws(**{"sts get-caller-identity": {"rc": 254, "stderr": error}})
    code, out = _run("quotas", capsys)
    assert code == 1
    assert "no valid credentials" in out and "ExpiredToken" in out and "Traceback" not in out


def test_an_unknown_check_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        preflight.main(["--stack", "staging", "--check", "reach,quota"])
    assert exited.value.code == 2
    assert "allowed: reach,addons,addon-config,quotas,caller" in capsys.readouterr().err


def test_role_arn_of_an_assumed_role_session() -> None:
    session = "arn:aws:sts::111122223333:assumed-role/github-actions-deploy/gh-run-1"
    assert preflight.role_arn_of(session) == DEPLOYER
    user = "arn:aws:iam::111122223333:user/alice"
    assert preflight.role_arn_of(user) == user
    # STS drops the role's path: a configured ARN with a path still matches by account and name.
    with_path = STAGING.model_copy(
        update={
            "cluster": STAGING.cluster.model_copy(update={"admin_principal_arns": [f"{ADMIN[:-14]}ops/platform-admin"]})
        }
    )
    assert with_path.cluster.admin_principal_arns == ["arn:aws:iam::111122223333:role/ops/platform-admin"]
    assert preflight.listed_keys(with_path, ADMIN) == ["gpu-platform:cluster.adminPrincipalArns[0]"]
    other_account = "arn:aws:iam::731245981032:role/platform-admin"
    assert preflight.listed_keys(with_path, other_account) == []


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_addons_check_covers_every_add_on_the_plan_pins(stack: str, plans: dict[str, Plan]) -> None:
    """Every `aws:eks/addon:Addon` with an addonVersion in the synth plan is one the preflight asks AWS about."""
    plan = plans[stack]
    in_plan = sorted(
        (r["inputs"]["addonName"], r["inputs"]["addonVersion"])
        for r in plan.resources
        if r["type"] == "aws:eks/addon:Addon" and "addonVersion" in r["inputs"]
    )
    settings = settings_for(stack)
    assert in_plan and sorted(preflight.pinned_addons(settings)) == in_plan
