"""`network`, `cluster` and `systemNodes`: the VPC, the EKS control plane and who may use it, the system nodes."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal, Self

from pydantic import Field, model_validator

from components.facts.constants import MOST_ALLOCATED
from components.settings.fields import (
    Cidr,
    CpuInstanceType,
    PrincipalArn,
    ScalingSettings,
    SettingsModel,
    SubnetId,
    VpcId,
)

# EKS control-plane log types (enabled_cluster_log_types); pydantic names these in its error.
ControlPlaneLogType = Literal["api", "audit", "authenticator", "controllerManager", "scheduler"]


class ExistingNetwork(SettingsModel):
    vpc_id: VpcId
    """The existing VPC; the program only adds discovery tags to it."""
    private_subnet_ids: Annotated[list[SubnetId], Field(min_length=2)]
    """Its private subnets, where every node runs."""
    public_subnet_ids: list[SubnetId] = []
    """Its public subnets, if any."""


class NetworkSettings(SettingsModel):
    vpc_cidr: Cidr = "10.0.0.0/16"
    """The VPC's CIDR, /16 to /20: private subnets get eighths, public subnets share the last eighth."""
    availability_zones: Annotated[int, Field(ge=2, le=4)] = 2
    """Zones to spread over: one private and one public subnet each."""
    nat_gateways: Literal["single", "one-per-az"] = "single"
    """Egress NAT gateways: one (cheap) or one per zone (survives a zone outage)."""
    existing: ExistingNetwork | None = None
    """Use an existing VPC instead (then without vpcCidr, availabilityZones, natGateways)."""

    @model_validator(mode="after")
    def _vpc_large_enough(self) -> Self:
        prefix = ipaddress.IPv4Network(self.vpc_cidr).prefixlen
        if not 16 <= prefix <= 20:
            raise ValueError(f"vpcCidr: prefix /{prefix} is not allowed; use /16 to /20 (subnets are carved from it)")
        return self


class VpcCniSettings(SettingsModel):
    prefix_delegation: bool = True
    """/28 prefixes per ENI, so small GPU nodes can run `gpuNodes.maxPods` pods."""


class ClusterSettings(SettingsModel):
    # Private by default: a public endpoint must be asked for, and then only for listed CIDRs.
    endpoint_public_access: bool = False
    """A public API endpoint (the private one is always on), for publicAccessCidrs only."""
    public_access_cidrs: list[Cidr] = []
    """Who may reach the public endpoint (not 0.0.0.0/0); required while it is on."""
    admin_principal_arns: list[PrincipalArn] = []
    """Cluster admins (AmazonEKSClusterAdminPolicy access entries, keyed by a slug of the ARN); each once,
    not the deployer."""
    # Who runs `pulumi up`: EKS makes it cluster admin itself (see components/renderers/access/access_entries.py).
    deployer_principal_arn: PrincipalArn | None = None
    """Who runs `pulumi up`: EKS makes it cluster admin as the cluster creator; `preview`/`up` warn when
    the caller differs or this is unset."""
    viewer_principal_arns: list[PrincipalArn] = []
    """Principals with cluster-wide read access (AmazonEKSAdminViewPolicy, cluster scope), e.g. the PR preview
    role, which `pulumi preview --refresh` needs to read Kubernetes resources; IAM role or user ARNs, each once,
    none of them the deployer or an admin (one access entry per principal)."""
    log_types: list[ControlPlaneLogType] = [
        "api", "audit", "authenticator",
    ]  # fmt: skip
    """Control-plane logs sent to CloudWatch."""
    vpc_cni: VpcCniSettings = VpcCniSettings()
    """The VPC CNI add-on."""
    most_allocated_scoring: bool = True
    """Pack pods: kube-scheduler's NodeResourcesFit scores nodes MostAllocated (nvidia.com/gpu weight 5, cpu
    and memory 1) instead of EKS's default LeastAllocated, cluster-wide, system pods included (docs/cost.md)."""

    @property
    def scoring_strategy(self) -> Literal["MostAllocated", "LeastAllocated"]:
        """The scheduler's NodeResourcesFit scoring the stack runs with (EKS's default: LeastAllocated)."""
        return MOST_ALLOCATED if self.most_allocated_scoring else "LeastAllocated"

    @model_validator(mode="after")
    def _public_endpoint_is_restricted(self) -> Self:
        arns = self.admin_principal_arns
        repeat = next((i for i, arn in enumerate(arns) if arn in arns[:i]), None)
        if repeat is not None:
            raise ValueError(
                f"adminPrincipalArns[{repeat}]: each principal once (EKS allows one access entry per principal): "
                f"{arns[repeat]} repeats adminPrincipalArns[{arns.index(arns[repeat])}]"
            )
        if self.deployer_principal_arn in self.admin_principal_arns:
            raise ValueError(
                f"adminPrincipalArns: lists {self.deployer_principal_arn}, which is also "
                "gpu-platform:cluster.deployerPrincipalArn; remove it from adminPrincipalArns: pulumi-eks always "
                "has EKS create the cluster creator's admin access entry, and a second entry for the same "
                "principal fails with 409 ResourceInUseException"
            )
        self._viewers_once()
        if self.endpoint_public_access and not self.public_access_cidrs:
            raise ValueError(
                "publicAccessCidrs: must list at least one CIDR while endpointPublicAccess is true "
                "(the public endpoint is never left open to the internet by default)"
            )
        if "0.0.0.0/0" in self.public_access_cidrs:
            raise ValueError("publicAccessCidrs: 0.0.0.0/0 is not allowed; list your egress CIDRs")
        return self

    def _viewers_once(self) -> None:
        viewers = self.viewer_principal_arns
        for index, arn in enumerate(viewers):
            if arn in viewers[:index]:
                raise ValueError(
                    f"viewerPrincipalArns[{index}]: each principal once (EKS allows one access entry per principal): "
                    f"{arn} repeats viewerPrincipalArns[{viewers.index(arn)}]"
                )
            if arn == self.deployer_principal_arn:
                raise ValueError(
                    f"viewerPrincipalArns[{index}]: {arn} is also gpu-platform:cluster.deployerPrincipalArn, already "
                    "cluster admin through the cluster-creator entry; remove it from viewerPrincipalArns (a second "
                    "entry for the same principal fails with 409 ResourceInUseException)"
                )
            if arn in self.admin_principal_arns:
                raise ValueError(
                    f"viewerPrincipalArns[{index}]: {arn} is also gpu-platform:cluster.adminPrincipalArns"
                    f"[{self.admin_principal_arns.index(arn)}]; a principal is admin or viewer, not both: "
                    "remove it from one list"
                )


class SystemNodeGroupSettings(ScalingSettings):
    instance_types: Annotated[list[CpuInstanceType], Field(min_length=1)] = ["m6i.large"]
    """Instance types of the system node group (Karpenter, CoreDNS, the hubs and proxies); every system pod must
    fit on desiredSize nodes of the smallest (the fit model, in the synth summary)."""
    min_size: Annotated[int, Field(ge=2, le=100)] = 2
    """Nodes at least: two, for Karpenter's two zone-spread replicas."""
    desired_size: Annotated[int, Field(ge=2, le=100)] = 2
    """Nodes at creation; minSize <= desiredSize <= maxSize."""
    max_size: Annotated[int, Field(ge=2, le=100)] = 4
    """Nodes at most."""
