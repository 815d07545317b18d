"""EKS access entries: a stable key per principal, and who is cluster admin and why. Pure, no pulumi.

pulumi-eks names each access entry child `<cluster component>-<key>` (pulumi/pulumi-eks
nodejs/eks/cluster/authenticationMode.ts `createAccessEntries`, v4.3.0), so the key is part of the
child's URN: keyed by list position, removing or reordering a principal would replace every entry
after it, and the replacement's create races the old entry's delete (409 ResourceInUseException).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

# A DNS label (RFC 1123): the key also ends up in resource names, so it must be safe there.
_MAX_SLUG = 63
_HASH_CHARS = 8
_NOT_DNS = re.compile(r"[^a-z0-9]+")

# pulumi-eks 4.x hard-codes `bootstrapClusterCreatorAdminPermissions: true` on the cluster
# (pulumi/pulumi-eks nodejs/eks/cluster/cluster.ts:739 at v4.3.0 and on master 7bf0c1b1, after it;
# pulumi/pulumi-eks#2373, still open): EKS always gives the cluster's creator its own admin entry.
CREATOR_REASON = "creator entry: EKS makes the identity that creates the cluster its admin"
EXPLICIT_REASON = "explicit access entry"
UNKNOWN_DEPLOYER = "<whoever runs the first `pulumi up`; set gpu-platform:cluster.deployerPrincipalArn>"


def principal_slug(arn: str) -> str:
    """`arn:aws:iam::111122223333:role/ci/Deploy` -> `role-ci-deploy-<8 hex>`: DNS-safe and stable.

    The readable part is the ARN's resource (`role/...`, `user/...`), lower-cased; the hash of the
    whole ARN keeps two principals apart that differ only in account, partition, case or punctuation.
    """
    resource = arn.split(":", 5)[-1]
    digest = hashlib.sha256(arn.encode()).hexdigest()[:_HASH_CHARS]
    readable = _NOT_DNS.sub("-", resource.lower()).strip("-")
    readable = readable[: _MAX_SLUG - _HASH_CHARS - 1].rstrip("-")
    return f"{readable}-{digest}" if readable else f"principal-{digest}"


@dataclass(frozen=True)
class ClusterAdmin:
    principal: str
    reason: str


def cluster_admins(deployer_arn: str | None, admin_arns: Sequence[str]) -> list[ClusterAdmin]:
    """Everyone with cluster-admin after the first `up`: the creator entry first, then the explicit ones."""
    creator = ClusterAdmin(deployer_arn or UNKNOWN_DEPLOYER, CREATOR_REASON)
    explicit = [ClusterAdmin(arn, f"{EXPLICIT_REASON} '{principal_slug(arn)}'") for arn in admin_arns]
    return [creator, *explicit]


def issuer_mismatch(deployer_arn: str | None, issuer_arn: str) -> str | None:
    """Why the configured deployer and the identity running `pulumi up` disagree, or None when they match.

    `issuer_arn` is the caller's IAM identity as `sts get-caller-identity` + `iam get-session-context`
    report it: for an assumed role, the role's ARN (with its path), not the session ARN.
    """
    if deployer_arn is None:
        return (
            "gpu-platform:cluster.deployerPrincipalArn is not set: EKS will make the identity running this "
            f"update ({issuer_arn}) cluster admin when it creates the cluster; set the key to that ARN so "
            "the stack records who that is"
        )
    if deployer_arn != issuer_arn:
        return (
            f"gpu-platform:cluster.deployerPrincipalArn is {deployer_arn}, but this update runs as {issuer_arn}: "
            "EKS makes the identity that creates the cluster its admin, so the creator entry will not be the "
            "configured deployer"
        )
    return None
