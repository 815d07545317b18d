"""Subnet layout and tags for the platform VPC (pure: settings in, plain data out)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from components.facts.constants import KARPENTER_DISCOVERY_TAG
from components.settings import NetworkSettings


@dataclass(frozen=True)
class SubnetPair:
    availability_zone: str
    private_cidr: str
    public_cidr: str


def subnet_layout(network: NetworkSettings, zones: list[str]) -> list[SubnetPair]:
    """One private and one public subnet per zone.

    Private subnets take eighths of the VPC (a /19 of a /16: room for prefix delegation, which
    hands out /28s); public subnets only hold load balancers and NAT gateways, so they share the
    last eighth in /22s.
    """
    vpc = ipaddress.IPv4Network(network.vpc_cidr)
    eighths = list(vpc.subnets(prefixlen_diff=3))
    public_blocks = list(eighths[-1].subnets(prefixlen_diff=3))
    if len(zones) < network.availability_zones:
        raise ValueError(f"region offers {len(zones)} availability zones; {network.availability_zones} requested")
    return [
        SubnetPair(zone, str(eighths[i]), str(public_blocks[i]))
        for i, zone in enumerate(zones[: network.availability_zones])
    ]


def private_subnet_tags(cluster_name: str) -> dict[str, str]:
    # Internal load balancers land here, and Karpenter launches GPU nodes into these subnets.
    return {"kubernetes.io/role/internal-elb": "1", KARPENTER_DISCOVERY_TAG: cluster_name}


def public_subnet_tags() -> dict[str, str]:
    return {"kubernetes.io/role/elb": "1"}
