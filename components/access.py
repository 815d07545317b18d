"""Cluster access: one EKS access entry per principal (admins, viewers, lab members).

Admins and viewers get policy associations; lab members get Kubernetes groups on their entry, bound by
each lab's RoleBinding (`components/labs.py`). Pure decisions live in `components.renderers.access.access_entries`
(`explicit_entries`); this component only creates them. The entry's resource name depends on the principal
alone (`access-<slug>`), so moving a principal between admins, viewers and labs replaces associations and
updates the entry's `kubernetesGroups` in place (not a replacing input: hashicorp/terraform-provider-aws
internal/service/eks/access_entry.go calls UpdateAccessEntry): the entry, which EKS allows once per
principal, is never created anew while the old one still exists (409 ResourceInUseException).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.renderers.access.access_entries import PrincipalAccess, explicit_entries, principal_slug
from components.settings import StackSettings

ENTRY_TYPE = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION_TYPE = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
# Where earlier versions of this program kept the same entries (see access_entries.py): aliases, so a
# deployed stack adopts them in place. Admins: children of pulumi-eks's Cluster inside `cluster`;
# lab members: children of the `labs` component.
_FORMER_ADMIN_CHAIN = "gpu-platform:cluster:Cluster$eks:index:Cluster"
_FORMER_ADMIN_PREFIX = "cluster-eks"
_FORMER_LABS_CHAIN = "gpu-platform:labs:Labs"
_FORMER_LABS_PREFIX = "labs-member"


@dataclass(frozen=True)
class ClusterAccessArgs:
    settings: StackSettings
    # The EKS cluster's name as an output, so every entry waits for the cluster.
    eks_cluster_name: pulumi.Input[str]


def _urn(type_chain: str, name: str) -> str:
    return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{type_chain}::{name}"


def former_entry_urns(slug: str) -> list[str]:
    return [
        _urn(f"{_FORMER_ADMIN_CHAIN}${ENTRY_TYPE}", f"{_FORMER_ADMIN_PREFIX}-{slug}"),
        _urn(f"{_FORMER_LABS_CHAIN}${ENTRY_TYPE}", f"{_FORMER_LABS_PREFIX}-{slug}"),
    ]


def former_association_urns(slug: str, association: str) -> list[str]:
    if association == "cluster-admin":
        chain = f"{_FORMER_ADMIN_CHAIN}${ENTRY_TYPE}${ASSOCIATION_TYPE}"
        return [_urn(chain, f"{_FORMER_ADMIN_PREFIX}-{slug}-cluster-admin")]
    return []


class ClusterAccess(pulumi.ComponentResource):
    entries: dict[str, aws.eks.AccessEntry]  # principal ARN -> its entry

    def __init__(self, name: str, args: ClusterAccessArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:access:ClusterAccess", name, None, opts)
        self.entries = {}
        for access in explicit_entries(args.settings.cluster, args.settings.labs):
            self.entries[access.principal] = self._entry(name, args, access)
        self.register_outputs({"principals": sorted(self.entries)})

    def _entry(self, name: str, args: ClusterAccessArgs, access: PrincipalAccess) -> aws.eks.AccessEntry:
        slug = principal_slug(access.principal)
        entry = aws.eks.AccessEntry(
            f"{name}-{slug}",
            cluster_name=args.eks_cluster_name,
            principal_arn=access.principal,
            type="STANDARD",
            kubernetes_groups=access.kubernetes_groups,
            tags=args.settings.tags,
            opts=pulumi.ResourceOptions(parent=self, aliases=former_entry_urns(slug)),
        )
        for grant in access.grants:
            aws.eks.AccessPolicyAssociation(
                f"{name}-{slug}-{grant.association}",
                cluster_name=args.eks_cluster_name,
                principal_arn=access.principal,
                policy_arn=grant.policy_arn,
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(
                    type=grant.scope, namespaces=list(grant.namespaces) or None
                ),
                # Every input forces a replacement, and EKS keeps one association per (principal, policy):
                # create-before-delete would associate (a no-op) and then disassociate, leaving the principal
                # without that access after a change (of labs, say). Delete first, then create.
                opts=pulumi.ResourceOptions(
                    parent=self,
                    depends_on=[entry],
                    delete_before_replace=True,
                    aliases=former_association_urns(slug, grant.association),
                ),
            )
        return entry
