"""The policy pack's policies: each pure rule of `policy.rules` wrapped as a mandatory resource policy."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from policy.rules import RULES, PolicyRule

PACK_NAME = "gpu-platform"
ENFORCEMENT = EnforcementLevel.MANDATORY


def _validator(rule: PolicyRule) -> Any:
    def validate(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
        for message in rule.check(args.resource_type, args.props):
            report_violation(message, None)

    return validate


def policies() -> list[Policy]:
    return [
        ResourceValidationPolicy(
            name=rule.name,
            description=rule.description,
            enforcement_level=ENFORCEMENT,
            validate=_validator(rule),
        )
        for rule in RULES
    ]
