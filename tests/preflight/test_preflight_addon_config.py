"""`preflight.py --check addon-config`: each add-on's configurationValues against the JSON schema EKS returns.

`aws eks describe-addon-configuration --addon-name N --addon-version V` answers `{"addonName", "addonVersion",
"configurationSchema": "<a JSON schema, as a string>", "podIdentityConfiguration"}` (EKS API reference,
DescribeAddonConfiguration, Response Syntax). The fake `aws` (tests/support/fake_aws.py) answers with schemas shaped
like the add-ons' own: draft 7, `additionalProperties: false` on every object the chart closes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import preflight
from components.facts.constants import (
    CLOUDWATCH_OBSERVABILITY_ADDON,
    CLOUDWATCH_OBSERVABILITY_ADDON_VERSION,
    NODE_MONITORING_AGENT_ADDON,
    NODE_MONITORING_AGENT_ADDON_VERSION,
)
from offline.plan import Plan
from tests.support import fake_aws
from tests.support.settings import settings_for

STAGING = settings_for("staging")
DEPLOYER = "arn:aws:iam::111122223333:role/github-actions-deploy"
DRAFT7 = "http://json-schema.org/draft-07/schema#"
TOLERATIONS = {"type": "array", "items": {"type": "object"}}


def _closed(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties}


# What each add-on's configurationSchema says about the keys the stack sets (and a sibling it does not set).
CLOUDWATCH_SCHEMA = {
    "$schema": DRAFT7,
    **_closed(
        tolerations=TOLERATIONS,
        containerLogs=_closed(enabled={"type": "boolean"}),
        dcgmExporter=_closed(enabled={"type": "boolean"}, resources={"type": "object"}),
        neuronMonitor=_closed(enabled={"type": "boolean"}),
        agent=_closed(config={"type": "object"}, name={"type": "string"}),
    ),
}
NODE_MONITORING_SCHEMA = {
    "$schema": DRAFT7,
    **_closed(nodeAgent=_closed(tolerations=TOLERATIONS), dcgmAgent=_closed(tolerations=TOLERATIONS)),
}


def _configuration(addon: str, version: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    answer: dict[str, Any] = {"addonName": addon, "addonVersion": version, "podIdentityConfiguration": []}
    if schema is not None:
        answer["configurationSchema"] = json.dumps(schema)
    return {"stdout": answer}


ANSWERS: dict[str, Any] = {
    "sts get-caller-identity": fake_aws.assumed(DEPLOYER),
    f"eks describe-addon-configuration --addon-name {CLOUDWATCH_OBSERVABILITY_ADDON}": _configuration(
        CLOUDWATCH_OBSERVABILITY_ADDON, CLOUDWATCH_OBSERVABILITY_ADDON_VERSION, CLOUDWATCH_SCHEMA
    ),
    f"eks describe-addon-configuration --addon-name {NODE_MONITORING_AGENT_ADDON}": _configuration(
        NODE_MONITORING_AGENT_ADDON, NODE_MONITORING_AGENT_ADDON_VERSION, NODE_MONITORING_SCHEMA
    ),
}


@pytest.fixture
def aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def answer(**overrides: Any) -> Path:
        return fake_aws.install(tmp_path, monkeypatch, {**ANSWERS, **overrides})

    return answer


def _run(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = preflight.main(["--stack", "staging", "--check", "addon-config"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_stacks_configuration_values_are_accepted(aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    log = aws()
    code, out = _run(capsys)
    assert code == 0, out
    asked = log.read_text().splitlines()
    for addon, version, _ in preflight.configured_addons(STAGING):
        assert (
            f"eks describe-addon-configuration --addon-name {addon} --addon-version {version} "
            f"--region {STAGING.region} --output json"
        ) in asked
        assert f"addon-config: ok: {addon} {version} accepts its configurationValues" in out
    assert "asked: aws eks describe-addon-configuration" in out


def test_an_unknown_key_is_rejected_naming_the_add_on_the_key_and_the_complaint(
    aws: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    values = preflight.cloudwatch_observability_configuration()
    values["dcgmExporter"]["bogus"] = True
    monkeypatch.setattr(preflight, "cloudwatch_observability_configuration", lambda: values)
    aws()
    code, out = _run(capsys)
    assert code == 1
    assert f"addon-config: FAILED: {CLOUDWATCH_OBSERVABILITY_ADDON} {CLOUDWATCH_OBSERVABILITY_ADDON_VERSION}" in out
    assert "dcgmExporter.bogus: Additional properties are not allowed ('bogus' was unexpected)" in out
    assert "InvalidParameterException" in out and "Traceback" not in out
    # The other add-on still passes: each add-on is its own result.
    assert f"addon-config: ok: {NODE_MONITORING_AGENT_ADDON}" in out


def test_a_key_the_pinned_version_dropped_is_rejected(aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The add-on's own schema decides: a version without `dcgmExporter` refuses the key the stack sets."""
    older = json.loads(json.dumps(CLOUDWATCH_SCHEMA))
    del older["properties"]["dcgmExporter"]
    aws(
        **{
            f"eks describe-addon-configuration --addon-name {CLOUDWATCH_OBSERVABILITY_ADDON}": _configuration(
                CLOUDWATCH_OBSERVABILITY_ADDON, CLOUDWATCH_OBSERVABILITY_ADDON_VERSION, older
            )
        }
    )
    code, out = _run(capsys)
    assert code == 1
    assert "dcgmExporter: Additional properties are not allowed ('dcgmExporter' was unexpected)" in out


def test_a_value_of_the_wrong_type_is_rejected_at_its_key(
    aws: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    values = preflight.cloudwatch_observability_configuration()
    values["containerLogs"]["enabled"] = "false"
    monkeypatch.setattr(preflight, "cloudwatch_observability_configuration", lambda: values)
    aws()
    code, out = _run(capsys)
    assert code == 1 and "containerLogs.enabled: 'false' is not of type 'boolean'" in out


def test_an_add_on_without_a_schema_accepts_no_values(aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    aws(
        **{
            f"eks describe-addon-configuration --addon-name {NODE_MONITORING_AGENT_ADDON}": _configuration(
                NODE_MONITORING_AGENT_ADDON, NODE_MONITORING_AGENT_ADDON_VERSION, None
            )
        }
    )
    code, out = _run(capsys)
    assert code == 1
    assert f"{NODE_MONITORING_AGENT_ADDON} {NODE_MONITORING_AGENT_ADDON_VERSION} rejects" in out
    assert "publishes no configuration schema" in out and "got:   no configurationSchema" in out


def test_a_schema_that_is_no_json_is_a_clear_error(aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    broken = {"stdout": {"addonName": CLOUDWATCH_OBSERVABILITY_ADDON, "configurationSchema": "{not json"}}
    aws(**{f"eks describe-addon-configuration --addon-name {CLOUDWATCH_OBSERVABILITY_ADDON}": broken})
    code, out = _run(capsys)
    assert code == 1
    assert "answered a configurationSchema that is no JSON" in out and "Traceback" not in out


def test_cli_missing_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, out = _run(capsys)
    assert code == 1
    assert "the AWS CLI (`aws`) is not on PATH" in out and "Traceback" not in out


def test_bad_credentials_are_a_clear_error(aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    error = "An error occurred (InvalidClientTokenId) when calling the GetCallerIdentity operation: invalid token"
    log = aws(**{"sts get-caller-identity": {"rc": 254, "stderr": error}})
    code, out = _run(capsys)
    assert code == 1
    assert "no valid credentials" in out and "InvalidClientTokenId" in out and "Traceback" not in out
    assert "describe-addon-configuration" not in log.read_text()  # nothing else is asked with a bad login


def test_access_denied_on_the_schema_is_a_clear_error(aws: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A preview role without eks:DescribeAddonConfiguration (docs/lifecycle.md, one-time setup)."""
    denied = "An error occurred (AccessDeniedException) when calling the DescribeAddonConfiguration operation"
    aws(**{key: {"rc": 254, "stderr": denied} for key in ANSWERS if "describe-addon-configuration" in key})
    code, out = _run(capsys)
    assert code == 1 and "no valid credentials" in out and "DescribeAddonConfiguration" in out


def test_complaints_follow_the_schema_draft_and_pattern_properties() -> None:
    schema = {
        "$schema": DRAFT7,
        "type": "object",
        "additionalProperties": False,
        "patternProperties": {"^x-": {}},
        "properties": {"replicas": {"type": "integer", "minimum": 1}},
    }
    assert preflight.schema_complaints({"replicas": 2, "x-note": "ok"}, schema) == []
    assert preflight.schema_complaints({"replicas": 0, "other": 1}, schema) == [
        "other: 'other' does not match any of the regexes: '^x-'",
        "replicas: 0 is less than the minimum of 1",
    ]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_the_check_covers_every_configured_add_on_of_the_plan(stack: str, plans: dict[str, Plan]) -> None:
    """Every `aws:eks/addon:Addon` with configurationValues in the synth plan is asked about, with those values."""
    in_plan = sorted(
        (r["inputs"]["addonName"], r["inputs"]["addonVersion"], json.loads(r["inputs"]["configurationValues"]))
        for r in plans[stack].resources
        if r["type"] == "aws:eks/addon:Addon" and "configurationValues" in r["inputs"]
    )
    settings = settings_for(stack)
    assert in_plan and sorted(preflight.configured_addons(settings)) == in_plan
