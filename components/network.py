"""The VPC: private subnets for nodes, public subnets for load balancers, NAT egress.

With `network.existing` set, no VPC is created: the given subnets are only tagged for
Karpenter discovery.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.facts.constants import KARPENTER_DISCOVERY_TAG
from components.renderers.nodes.network_layout import SubnetPair, private_subnet_tags, public_subnet_tags, subnet_layout
from components.settings import StackSettings

# `opt-in-status` of a region's own availability zones (Local/Wavelength Zones: "opted-in").
STANDARD_ZONE_OPT_IN_STATUS = "opt-in-not-required"


@dataclass(frozen=True)
class NetworkArgs:
    settings: StackSettings


class Network(pulumi.ComponentResource):
    vpc_id: pulumi.Output[str]
    private_subnet_ids: pulumi.Output[list[str]]
    public_subnet_ids: pulumi.Output[list[str]]

    def __init__(self, name: str, args: NetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:network:Network", name, None, opts)
        settings = args.settings
        existing = settings.network.existing
        if existing is not None:
            self._adopt(name, settings)
        else:
            self._create(name, settings)
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "privateSubnetIds": self.private_subnet_ids,
                "publicSubnetIds": self.public_subnet_ids,
            }
        )

    def _adopt(self, name: str, settings: StackSettings) -> None:
        existing = settings.network.existing
        assert existing is not None
        for index, subnet_id in enumerate(existing.private_subnet_ids):
            aws.ec2.Tag(
                f"{name}-private-{index}-discovery",
                resource_id=subnet_id,
                key=KARPENTER_DISCOVERY_TAG,
                value=settings.cluster_name,
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.vpc_id = pulumi.Output.from_input(existing.vpc_id)
        self.private_subnet_ids = pulumi.Output.from_input(list(existing.private_subnet_ids))
        self.public_subnet_ids = pulumi.Output.from_input(list(existing.public_subnet_ids))

    def _create(self, name: str, settings: StackSettings) -> None:
        layout = subnet_layout(settings.network, self._standard_zones())
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=settings.network.vpc_cidr,
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags={**settings.tags, "Name": f"{settings.cluster_name}-vpc"},
            opts=pulumi.ResourceOptions(parent=self, protect=settings.protect_resources),
        )
        public_subnets, nat_ids = self._public_subnets(name, settings, vpc, layout)
        private_subnets = self._private_subnets(name, settings, vpc, layout, nat_ids)
        self.vpc_id = vpc.id
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in private_subnets]).apply(list)
        self.public_subnet_ids = pulumi.Output.all(*[s.id for s in public_subnets]).apply(list)

    def _standard_zones(self) -> list[str]:
        # Regular zones only: opted-in Local and Wavelength Zones are "available" too (and can sort
        # first), but they lack most instance types, NAT gateways and EKS control-plane ENIs.
        zones = aws.get_availability_zones(
            state="available",
            filters=[aws.GetAvailabilityZonesFilterArgs(name="opt-in-status", values=[STANDARD_ZONE_OPT_IN_STATUS])],
            opts=pulumi.InvokeOptions(parent=self),
        ).names
        return list(zones)

    def _public_subnets(
        self, name: str, settings: StackSettings, vpc: aws.ec2.Vpc, layout: list[SubnetPair]
    ) -> tuple[list[aws.ec2.Subnet], list[pulumi.Output[str]]]:
        """Public subnets routed to an internet gateway, with the NAT gateway(s) private subnets use."""
        cluster = settings.cluster_name
        tags = settings.tags
        child = pulumi.ResourceOptions(parent=self)
        gateway = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, tags={**tags, "Name": f"{cluster}-igw"}, opts=child
        )
        public_routes = aws.ec2.RouteTable(
            f"{name}-public",
            vpc_id=vpc.id,
            routes=[aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", gateway_id=gateway.id)],
            tags={**tags, "Name": f"{cluster}-public"},
            opts=child,
        )
        public_subnets, nat_ids = [], []
        for index, pair in enumerate(layout):
            public = aws.ec2.Subnet(
                f"{name}-public-{index}",
                vpc_id=vpc.id,
                cidr_block=pair.public_cidr,
                availability_zone=pair.availability_zone,
                tags={**tags, **public_subnet_tags(), "Name": f"{cluster}-public-{pair.availability_zone}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-public-{index}", subnet_id=public.id, route_table_id=public_routes.id, opts=child
            )
            public_subnets.append(public)
            if index == 0 or settings.network.nat_gateways == "one-per-az":
                eip = aws.ec2.Eip(
                    f"{name}-nat-{index}", domain="vpc", tags={**tags, "Name": f"{cluster}-nat-{index}"}, opts=child
                )
                nat = aws.ec2.NatGateway(
                    f"{name}-nat-{index}",
                    subnet_id=public.id,
                    allocation_id=eip.id,
                    tags={**tags, "Name": f"{cluster}-nat-{pair.availability_zone}"},
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[gateway]),
                )
                nat_ids.append(nat.id)
        return public_subnets, nat_ids

    def _private_subnets(
        self,
        name: str,
        settings: StackSettings,
        vpc: aws.ec2.Vpc,
        layout: list[SubnetPair],
        nat_ids: list[pulumi.Output[str]],
    ) -> list[aws.ec2.Subnet]:
        """Private subnets for nodes, each routed through a NAT gateway (round-robin when there is one)."""
        cluster = settings.cluster_name
        tags = settings.tags
        child = pulumi.ResourceOptions(parent=self)
        private_subnets = []
        for index, pair in enumerate(layout):
            private = aws.ec2.Subnet(
                f"{name}-private-{index}",
                vpc_id=vpc.id,
                cidr_block=pair.private_cidr,
                availability_zone=pair.availability_zone,
                tags={**tags, **private_subnet_tags(cluster), "Name": f"{cluster}-private-{pair.availability_zone}"},
                opts=child,
            )
            routes = aws.ec2.RouteTable(
                f"{name}-private-{index}",
                vpc_id=vpc.id,
                routes=[
                    aws.ec2.RouteTableRouteArgs(cidr_block="0.0.0.0/0", nat_gateway_id=nat_ids[index % len(nat_ids)])
                ],
                tags={**tags, "Name": f"{cluster}-private-{pair.availability_zone}"},
                opts=child,
            )
            aws.ec2.RouteTableAssociation(
                f"{name}-private-{index}", subnet_id=private.id, route_table_id=routes.id, opts=child
            )
            private_subnets.append(private)
        return private_subnets
