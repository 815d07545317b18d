"""EKS access entries: a stable key per principal, who gets which access and why. Pure, no pulumi.

EKS allows one access entry per principal (a second create fails with 409 ResourceInUseException), so
every principal but the cluster creator gets exactly one entry whose resource name is `principal_slug`
of its ARN, whatever its role. Admins and viewers differ in their policy associations; lab members have
none: their entry's `kubernetesGroups` holds one group per lab, bound in the lab's namespace to the Role
`components.renderers.labs.lab_rbac` renders. Moving a principal between `cluster.adminPrincipalArns`,
`cluster.viewerPrincipalArns` and a lab's `members` then changes associations and the entry's groups
(`UpdateAccessEntry`, in place), never the entry itself (`components/access.py` creates them).

Until round 3, admins were pulumi-eks children named `<cluster component>-<key>` (pulumi/pulumi-eks
nodejs/eks/cluster/authenticationMode.ts `createAccessEntries`, v4.3.0; association
`<component>-<key>-<policy key>`, parented to its entry) and lab members `labs-member-<slug>`: both
former URNs are aliases of the new entry, so a deployed stack moves them without a delete or create.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from components.facts.constants import ACCESS_ENTRY_MARKER_GROUP, CLUSTER_ADMIN_POLICY_ARN, CLUSTER_VIEW_POLICY_ARN
from components.renderers.labs import lab_rbac
from components.settings import ClusterSettings, LabSettings

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


# --- the access matrix: every principal, its access, and the config key granting it ----------------

ADMIN_KEY = "gpu-platform:cluster.adminPrincipalArns"
VIEWER_KEY = "gpu-platform:cluster.viewerPrincipalArns"
DEPLOYER_KEY = "gpu-platform:cluster.deployerPrincipalArn"


@dataclass(frozen=True)
class Grant:
    """One policy association: what it allows, where, and which config keys grant it."""

    access: str  # "cluster admin", "cluster view", "edit in namespaces a, b"
    association: str  # the association's short name, part of its resource name
    policy_arn: str
    scope: str  # EKS accessScope.type: "cluster" or "namespace"
    namespaces: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupGrant:
    """A Kubernetes group on the entry, bound by a RoleBinding in one lab's namespace."""

    group: str
    namespace: str
    keys: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrincipalAccess:
    principal: str
    grants: tuple[Grant, ...] = field(default_factory=tuple)
    # The creator entry: EKS creates it with the cluster, so this program creates no entry for it.
    creator: bool = False
    group_grants: tuple[GroupGrant, ...] = ()

    @property
    def kubernetes_groups(self) -> list[str]:
        """The entry's `kubernetesGroups`: the marker first (never empty, see constants), then the labs'."""
        return [ACCESS_ENTRY_MARKER_GROUP, *(grant.group for grant in self.group_grants)]


def access_matrix(cluster: ClusterSettings, labs: Sequence[LabSettings]) -> list[PrincipalAccess]:
    """The creator first, then every explicit principal (sorted by ARN) with its grants.

    Settings validation already rejects conflicting listings (deployer in any list, admin also viewer or lab
    member); a viewer may also be a lab member (cluster view plus the lab-member Role in its labs).
    """
    creator = PrincipalAccess(
        cluster.deployer_principal_arn or UNKNOWN_DEPLOYER,
        (Grant("cluster admin", "cluster-admin", CLUSTER_ADMIN_POLICY_ARN, "cluster", keys=(DEPLOYER_KEY,)),),
        creator=True,
    )
    grants: dict[str, list[Grant]] = {}
    for index, arn in enumerate(cluster.admin_principal_arns):
        grant = Grant(
            "cluster admin", "cluster-admin", CLUSTER_ADMIN_POLICY_ARN, "cluster", keys=(f"{ADMIN_KEY}[{index}]",)
        )
        grants.setdefault(arn, []).append(grant)
    for index, arn in enumerate(cluster.viewer_principal_arns):
        grant = Grant(
            "cluster view", "cluster-view", CLUSTER_VIEW_POLICY_ARN, "cluster", keys=(f"{VIEWER_KEY}[{index}]",)
        )
        grants.setdefault(arn, []).append(grant)
    group_grants: dict[str, list[GroupGrant]] = {}
    for lab_index, lab in sorted(enumerate(labs), key=lambda item: item[1].name):
        for member_index, member in enumerate(lab.members):
            key = f"gpu-platform:labs[{lab_index}].members[{member_index}]"
            group_grants.setdefault(member, []).append(GroupGrant(lab_rbac.lab_group(lab.name), lab.name, (key,)))
    principals = sorted({*grants, *group_grants})
    explicit = [
        PrincipalAccess(arn, tuple(grants.get(arn, ())), group_grants=tuple(group_grants.get(arn, ())))
        for arn in principals
    ]
    return [creator, *explicit]


def explicit_entries(cluster: ClusterSettings, labs: Sequence[LabSettings]) -> list[PrincipalAccess]:
    """The principals this program creates an access entry for (everyone but the creator)."""
    return [access for access in access_matrix(cluster, labs) if not access.creator]


def matrix_lines(cluster: ClusterSettings, labs: Sequence[LabSettings]) -> list[str]:
    """The synth summary's access matrix: principal -> access -> the config key granting it, then what each
    lab group may do (the rendered Role's resources and verbs)."""
    lines = ["Access matrix (EKS access entries; one per principal: policy associations and Kubernetes groups):"]
    for access in access_matrix(cluster, labs):
        note = f"  [{CREATOR_REASON}]" if access.creator else f"  [entry '{principal_slug(access.principal)}']"
        lines.append(f"  {access.principal}{note}")
        for grant in access.grants:
            lines.append(f"    -> {grant.access:<34} <- {', '.join(grant.keys)}")
        for group in access.group_grants:
            lines.append(f"    -> {'group ' + group.group:<34} <- {', '.join(group.keys)}")
    if labs:
        lines.append("  Lab groups (RoleBinding <lab>/lab-member -> Role lab-member; the same rules in every lab):")
        lines.append(f"    {', '.join(lab_rbac.lab_group(lab.name) for lab in labs)}")
        lines += lab_rbac.rule_lines("      ")
        lines.append("      (nothing else: no writes to networkpolicies, resourcequotas, limitranges; no RBAC)")
    return lines
