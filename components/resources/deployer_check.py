"""Warn when the identity running `pulumi up` is not the configured deployer (EKS makes it cluster admin).

Thin glue over two invokes; the comparison itself is `access_entries.issuer_mismatch`. The offline
synth runs this too: its mocks answer as the configured deployer, so the synth stays quiet.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components.renderers.access.access_entries import issuer_mismatch
from components.settings import ClusterSettings


def warn_unless_deployer(cluster: ClusterSettings) -> pulumi.Output[str | None]:
    """Log a warning naming both identities when they differ or the key is unset; the warning (or None)."""
    caller = aws.get_caller_identity_output()
    # An assumed-role session ARN -> its role's ARN (with the role's path); users pass through unchanged.
    issuer = aws.iam.get_session_context_output(arn=caller.arn).issuer_arn

    def report(issuer_arn: str) -> str | None:
        message = issuer_mismatch(cluster.deployer_principal_arn, issuer_arn)
        if message is not None:
            pulumi.log.warn(message)
        return message

    return issuer.apply(report)
