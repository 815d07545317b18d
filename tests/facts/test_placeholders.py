"""`components/facts/placeholders.py`: documentation values in the stack files are named by the synth and rejected
by the policy pack."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from components.facts.placeholders import EXAMPLE_ACCOUNT_IDS, placeholder_values, placeholders_in
from components.settings.checks.fit_placement import group_fits
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.project_copy import copy_program
from offline.summary import placeholder_keys, render_summary
from tests.conftest import PROJECT_DIR, STACKS, synth_in_process
from tests.support.settings import settings_for

RULE = "no-documentation-placeholders"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("arn:aws:iam::111122223333:role/platform-admin", ["111122223333"]),
        ("arn:aws:sts::123456789012:assumed-role/x/y", ["123456789012"]),
        ("203.0.113.0/24", ["203.0.113.0/24"]),
        ("198.51.100.7", ["198.51.100.7"]),
        ("192.0.2.128/25", ["192.0.2.128/25"]),
        ("2001:db8:1::/48", ["2001:db8:1::/48"]),
        ('{"Condition": {"IpAddress": {"aws:SourceIp": ["192.0.2.10/32"]}}}', ["192.0.2.10/32"]),
        # Real-looking values, and look-alikes that are not documentation values.
        ("arn:aws:iam::731245981032:role/platform-admin", []),
        ("arn:aws:kms:us-west-2:000000000000:key/k", []),
        ("1111222233334", []),
        ("10.40.0.0/16", []),
        ("198.0.0.0/8", []),  # contains a documentation range, but is not one
        ("52.94.76.0/24", []),
        ("2600:1f14::/32", []),
        ("12:30", []),
        # RFC 2606 e-mail domains (issue 17): example.com/.net/.org and subdomains, *.example, *.test, *.invalid.
        ("ml-platform-oncall@example.com", ["ml-platform-oncall@example.com"]),
        ("ops@alerts.example.net", ["ops@alerts.example.net"]),
        ("a.b+gpu@Example.ORG", ["a.b+gpu@Example.ORG"]),
        ("oncall@acme.example", ["oncall@acme.example"]),
        ("oncall@ci.test", ["oncall@ci.test"]),
        ("nobody@mail.invalid", ["nobody@mail.invalid"]),
        ("oncall@acme-labs.io", []),
        ("oncall@example.community", []),
        ("oncall@myexample.com", []),
        ("oncall@testing.dev", []),
        # ... and as host names (a hub's hostname, an OAuth endpoint): nobody can own them.
        ("hub.learning-lab.example.org", ["hub.learning-lab.example.org"]),
        ("https://auth.example.com/oauth2/token", ["auth.example.com"]),
        ("lab.ci.test", ["lab.ci.test"]),
        ("hub.example.org.au", []),
        ("hub.myexample.org", []),
        ("example-org:vision-lab", []),
    ],
)
def test_placeholders_in(text: str, found: list[str]) -> None:
    assert placeholders_in(text) == found


def test_placeholder_values_names_the_paths() -> None:
    value = {"a": ["10.0.0.0/8", "203.0.113.0/24"], "b": {"c": "arn:aws:iam::444455556666:user/x"}, "d": 3}
    assert placeholder_values(value, "root") == [
        ("root.a[1]", "203.0.113.0/24"),
        ("root.b.c", "arn:aws:iam::444455556666:user/x"),
    ]


# Every key path of the shipped stack files that holds a documentation value (by hand, from the files).
SHIPPED_PLACEHOLDER_KEYS = {
    "staging": {
        "gpu-platform:cluster.publicAccessCidrs[0]",
        "gpu-platform:cluster.adminPrincipalArns[0]",
        "gpu-platform:cluster.deployerPrincipalArn",
        "gpu-platform:cluster.viewerPrincipalArns[0]",
        "gpu-platform:observability.alarmSubscribers[0]",
        "gpu-platform:labs[0].members[0]",
        "gpu-platform:labs[0].hub.hostname",
        "gpu-platform:labs[0].hub.certificateArn",
    },
    "prod": {
        "gpu-platform:cluster.publicAccessCidrs[0]",
        "gpu-platform:cluster.adminPrincipalArns[0]",
        "gpu-platform:cluster.deployerPrincipalArn",
        "gpu-platform:cluster.viewerPrincipalArns[0]",
        "gpu-platform:observability.alarmSubscribers[0]",
        "gpu-platform:observability.alarmSubscribers[1]",
        "gpu-platform:labs[0].members[0]",
        "gpu-platform:labs[0].members[1]",
        "gpu-platform:labs[1].members[0]",
        "gpu-platform:labs[1].members[1]",
        "gpu-platform:labs[0].hub.hostname",
        "gpu-platform:labs[0].hub.certificateArn",
    },
}


@pytest.mark.parametrize("stack", STACKS)
def test_synth_summary_names_every_placeholder_key(plans: dict[str, Plan], stack: str) -> None:
    settings = settings_for(stack)
    assert {key for key, _ in placeholder_keys(settings)} == SHIPPED_PLACEHOLDER_KEYS[stack]
    summary = render_summary(settings, plans[stack], stack, Path("out"), stack_forecast(settings), group_fits(settings))
    block = summary.split("Replace before a real deploy", 1)[1]
    for key, value in placeholder_keys(settings):
        assert f"  {key}: {value}" in block


def _policy_check(plan_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "policy.check", str(plan_dir)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("stack", STACKS)
def test_policy_check_rejects_the_shipped_plans(plans: dict[str, Plan], stack: str, tmp_path: Path) -> None:
    plans[stack].write(tmp_path)
    result = _policy_check(tmp_path)
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    cluster = settings_for(stack).cluster
    # What reaches resources: the explicit admin entries and the public endpoint CIDRs.
    observability = settings_for(stack).observability
    offending = {
        *(cidr for cidr in cluster.public_access_cidrs),
        *(account for arn in cluster.admin_principal_arns for account in placeholders_in(arn)),
        # The alarm e-mail reaches the SNS subscription (issue 17: RFC 2606 domains are placeholders too).
        *(email for email in observability.alarm_subscribers if "@" in email),
    }
    assert offending
    for value in offending:
        assert any(value in line for line in lines), value
    urn = re.escape(f"urn:pulumi:{stack}::gpu-platform::")
    assert all(re.match(rf"^{RULE}  {urn}\S+  \S", line) for line in lines), lines


@pytest.mark.parametrize("stack", STACKS)
def test_policy_check_passes_a_copy_with_real_looking_values(stack: str, tmp_path: Path) -> None:
    project = copy_program(tmp_path / "project")
    text = (PROJECT_DIR / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8")
    for account in EXAMPLE_ACCOUNT_IDS:
        text = text.replace(account, "731245981032")
    for documentation, real in (
        ("198.51.100.0/24", "52.94.76.0/24"),
        ("203.0.113.0/24", "35.160.12.0/24"),
        ("@example.com", "@acme-labs.io"),
        (".example.org", ".acme-labs.io"),
    ):
        text = text.replace(documentation, real)
    (project / f"Pulumi.{stack}.yaml").write_text(text, encoding="utf-8")
    out = tmp_path / "plan"
    code, stdout, stderr = synth_in_process(stack, out, project)
    assert code == 0, stdout + stderr
    assert "Replace before a real deploy" not in stdout
    result = _policy_check(out)
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


def test_policy_check_without_a_plan_exits_2(tmp_path: Path) -> None:
    result = _policy_check(tmp_path)
    assert result.returncode == 2 and "synth.py" in result.stderr
