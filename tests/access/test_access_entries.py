"""`components/renderers/access/access_entries.py` and the deployer check: the cluster creator's admin entry, the deployer key,
and access entries keyed by principal."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

from components.renderers.access.access_entries import (
    CREATOR_REASON,
    UNKNOWN_DEPLOYER,
    cluster_admins,
    issuer_mismatch,
    principal_slug,
)
from components.resources.deployer_check import warn_unless_deployer
from components.settings import ClusterSettings, SettingsError, load_settings
from offline.config_files import read_stack_config
from offline.plan import Plan
from offline.runner import install_mocks
from tests.conftest import PROJECT_DIR, SynthRun, run_program, synth_in_process
from tests.support.settings import settings_for

DEPLOYER = "arn:aws:iam::444455556666:role/ci/github-actions-deploy"
ADMINS = [
    "arn:aws:iam::444455556666:role/platform-admin",
    "arn:aws:iam::444455556666:role/sre-oncall",
    "arn:aws:iam::444455556666:user/break-glass",
]
ENTRY = "aws:eks/accessEntry:AccessEntry"
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


# --- principal_slug -----------------------------------------------------------------------------------------

SLUG_CASES = [
    "arn:aws:iam::111122223333:role/platform-admin",
    "arn:aws:iam::444455556666:role/platform-admin",  # same name, other account
    "arn:aws:iam::111122223333:role/Platform-Admin",  # case only
    "arn:aws:iam::111122223333:role/a/b",  # path vs. punctuation
    "arn:aws:iam::111122223333:role/a-b",
    "arn:aws:iam::111122223333:user/platform-admin",  # user vs. role
    "arn:aws-us-gov:iam::111122223333:role/platform-admin",  # partition only
    "arn:aws:iam::111122223333:role/" + "very-long.name_with+odd=chars,@x" * 16,
]


def test_slug_is_dns_safe_unique_and_deterministic() -> None:
    slugs = [principal_slug(arn) for arn in SLUG_CASES]
    assert all(DNS_LABEL.match(slug) for slug in slugs), slugs
    assert len(set(slugs)) == len(SLUG_CASES)
    assert slugs == [principal_slug(arn) for arn in SLUG_CASES]
    assert principal_slug(SLUG_CASES[0]).startswith("role-platform-admin-")


def test_shipped_plans_name_entries_by_slug(prod_plan: Plan, staging_plan: Plan) -> None:
    for plan in (prod_plan, staging_plan):
        entries = [e for e in plan.of_type(ENTRY) if e["name"].startswith("access-")]
        assert entries and all(e["name"] == f"access-{principal_slug(e['inputs']['principalArn'])}" for e in entries)


def _access_entry_urns(admins: list[str]) -> dict[str, str]:
    """principal ARN -> URN of its access entry, for prod with `admins` as the admin list."""
    config = read_stack_config(PROJECT_DIR, "prod")
    values = dict(config.values)
    cluster = json.loads(values["gpu-platform:cluster"])
    values["gpu-platform:cluster"] = json.dumps({**cluster, "adminPrincipalArns": admins})
    settings = load_settings(values)
    monitor = install_mocks(config.project, "prod", settings.region, values, list(config.secret_keys))

    @pulumi.runtime.test
    def program() -> None:
        run_program()

    try:
        program()
    finally:
        pulumi.runtime.settings.reset_options()
    urns = {r.inputs["principalArn"]: r.urn for r in monitor.registrations if r.type == ENTRY}
    return {arn: urns[arn] for arn in admins}


def test_reordering_or_removing_admins_keeps_the_other_entries() -> None:
    urns = _access_entry_urns(ADMINS)
    assert _access_entry_urns(list(reversed(ADMINS))) == urns
    assert _access_entry_urns(ADMINS[1:]) == {arn: urns[arn] for arn in ADMINS[1:]}


# --- the deployer key ---------------------------------------------------------------------------------------


def test_deployer_listed_as_admin_is_rejected_naming_both_keys() -> None:
    cluster = {"deployerPrincipalArn": DEPLOYER, "adminPrincipalArns": [ADMINS[0], DEPLOYER]}
    config = {"aws:region": "us-west-2", "gpu-platform:clusterName": "c", "gpu-platform:kubernetesVersion": "1.35"}
    with pytest.raises(SettingsError) as caught:
        load_settings({**config, "gpu-platform:cluster": json.dumps(cluster)})
    ((path, message),) = caught.value.problems
    assert path == "gpu-platform:cluster.adminPrincipalArns"
    assert "gpu-platform:cluster.deployerPrincipalArn" in message and "409" in message


def test_deployer_must_be_a_principal_arn() -> None:
    config = {"aws:region": "us-west-2", "gpu-platform:clusterName": "c", "gpu-platform:kubernetesVersion": "1.35"}
    with pytest.raises(SettingsError) as caught:
        load_settings({**config, "gpu-platform:cluster": json.dumps({"deployerPrincipalArn": "github-actions"})})
    assert [path for path, _ in caught.value.problems] == ["gpu-platform:cluster.deployerPrincipalArn"]


def test_synth_exits_2_when_prod_lists_its_deployer_as_admin(project_copy: Path, tmp_path: Path) -> None:
    stack_file = project_copy / "Pulumi.prod.yaml"
    text = (PROJECT_DIR / "Pulumi.prod.yaml").read_text(encoding="utf-8")
    deployer = "arn:aws:iam::444455556666:role/github-actions-deploy"
    admin_line = "      - arn:aws:iam::444455556666:role/platform-admin\n"
    assert f"deployerPrincipalArn: {deployer}\n" in text and admin_line in text
    stack_file.write_text(text.replace(admin_line, f"{admin_line}      - {deployer}\n"), encoding="utf-8")
    code, _, stderr = synth_in_process("prod", tmp_path, project_copy)
    assert code == 2, stderr
    assert "gpu-platform:cluster.adminPrincipalArns" in stderr
    assert "gpu-platform:cluster.deployerPrincipalArn" in stderr
    assert "Traceback" not in stderr


def test_prod_gives_its_deployer_no_explicit_entry(prod_plan: Plan) -> None:
    settings = settings_for("prod")
    deployer = settings.cluster.deployer_principal_arn
    assert deployer is not None and deployer.endswith(":role/github-actions-deploy")
    assert deployer not in [entry["inputs"]["principalArn"] for entry in prod_plan.of_type(ENTRY)]
    assert "accessEntries" not in prod_plan.one("eks:index:Cluster", "cluster-eks")["inputs"]


def test_cluster_admins_names_the_creator_first() -> None:
    admins = cluster_admins(DEPLOYER, ADMINS[:1])
    assert (admins[0].principal, admins[0].reason) == (DEPLOYER, CREATOR_REASON)
    assert admins[1].principal == ADMINS[0] and principal_slug(ADMINS[0]) in admins[1].reason
    assert cluster_admins(None, [])[0].principal == UNKNOWN_DEPLOYER


def test_issuer_mismatch_texts() -> None:
    assert issuer_mismatch(DEPLOYER, DEPLOYER) is None
    other = "arn:aws:iam::444455556666:user/alice"
    differs = issuer_mismatch(DEPLOYER, other)
    assert differs is not None and DEPLOYER in differs and other in differs
    unset = issuer_mismatch(None, other)
    assert unset is not None and "deployerPrincipalArn is not set" in unset and other in unset


# --- the deployer check under mocks ---------------------------------------------------------------------------


@pytest.fixture
def warnings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    logged: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: logged.append(message))
    yield logged
    pulumi.runtime.settings.reset_options()


def _check(deployer: str | None, caller: str, expect: Any) -> None:
    """Run the check with mocked credentials of `caller`; `expect(message)` asserts on what it returned."""
    config = read_stack_config(PROJECT_DIR, "prod")
    install_mocks(config.project, "prod", "us-west-2", config.values, [], caller_principal_arn=caller)
    checked: list[bool] = []

    @pulumi.runtime.test
    def check() -> pulumi.Output[None]:
        def verify(message: str | None) -> None:
            expect(message)
            checked.append(True)

        return warn_unless_deployer(ClusterSettings(deployer_principal_arn=deployer)).apply(verify)

    check()
    assert checked == [True], "the Output assertion ran"


def test_check_is_silent_when_the_deployer_role_runs_up(warnings: list[str]) -> None:
    """An assumed-role session of a role with a path: get_session_context gives back the role's ARN."""

    def expect(message: str | None) -> None:
        assert message is None

    _check(DEPLOYER, DEPLOYER, expect)
    assert warnings == []


def test_check_warns_naming_both_when_another_identity_runs_up(warnings: list[str]) -> None:
    other = "arn:aws:iam::444455556666:role/someone-else"

    def expect(message: str | None) -> None:
        assert message is not None and DEPLOYER in message and other in message

    _check(DEPLOYER, other, expect)
    assert len(warnings) == 1 and DEPLOYER in warnings[0] and other in warnings[0]


def test_check_warns_when_the_deployer_is_unset(warnings: list[str]) -> None:
    user = "arn:aws:iam::444455556666:user/alice"

    def expect(message: str | None) -> None:
        assert message is not None and "gpu-platform:cluster.deployerPrincipalArn" in message and user in message

    _check(None, user, expect)
    assert len(warnings) == 1 and user in warnings[0]


def test_synth_of_the_shipped_stacks_does_not_warn(staging_synth: SynthRun) -> None:
    assert "deployerPrincipalArn" not in staging_synth.stderr
    assert "Access matrix" in staging_synth.stdout and CREATOR_REASON in staging_synth.stdout
