"""Provider rules for the network inputs (EC2, EFS): one entry per (resource type, input path).

Transcribed from hashicorp/terraform-provider-aws (the v6 line that pulumi-aws 7.x bridges), each entry citing
the file and the schema function under `internal/service/`. Paths use the Pulumi input names: `a[].b` is
field `b` of every element of list `a`.
"""

from __future__ import annotations

from components.facts.aws_rules.validators import (
    InputRule,
    cidr_network,
    int_between,
    ipv4_cidr,
    length,
    not_pattern,
    one_of,
    pattern,
    rule,
    unconstrained,
)

VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
EIP = "aws:ec2/eip:Eip"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
ROUTE_TABLE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EFS_FILE_SYSTEM = "aws:efs/fileSystem:FileSystem"
EFS_MOUNT_TARGET = "aws:efs/mountTarget:MountTarget"

_EC2 = "internal/service/ec2/"
# validSecurityGroupRuleDescription (internal/service/ec2/validate.go), after the EC2 API's IpRange.Description.
_SG_RULE_DESCRIPTION = (
    length(0, 255),
    pattern(r"^[A-Za-z0-9 \.\_\-\:\/\(\)\#\,\@\[\]\+\=\&\;\{\}\!\$\*]*$"),
)
_SG_RULE_SOURCE = _EC2 + "validate.go validSecurityGroupRuleDescription"
# nullable.ValidateTypeStringNullableBool (internal/experimental/nullable): the launch template's tri-state bools.
_NULLABLE_BOOL = one_of("", "true", "false", "0", "1")
_LT = _EC2 + "ec2_launch_template.go ResourceLaunchTemplate"

NETWORK_RULES: dict[tuple[str, str], InputRule] = {
    (VPC, "cidrBlock"): rule(_EC2 + "vpc_.go ResourceVPC: validation.IsCIDRNetwork(16, 28)", cidr_network(16, 28)),
    (SUBNET, "cidrBlock"): rule(_EC2 + "vpc_subnet.go resourceSubnet: verify.ValidIPv4CIDRNetworkAddress", ipv4_cidr()),
    (SUBNET, "availabilityZone"): unconstrained(_EC2 + "vpc_subnet.go resourceSubnet"),
    (SUBNET, "vpcId"): unconstrained(_EC2 + "vpc_subnet.go resourceSubnet"),
    (INTERNET_GATEWAY, "vpcId"): unconstrained(_EC2 + "vpc_internet_gateway.go resourceInternetGateway"),
    (NAT_GATEWAY, "allocationId"): unconstrained(_EC2 + "vpc_nat_gateway.go resourceNATGateway"),
    (NAT_GATEWAY, "subnetId"): unconstrained(_EC2 + "vpc_nat_gateway.go resourceNATGateway"),
    (EIP, "domain"): rule(_EC2 + "ec2_eip.go resourceEIP: enum.Validate[DomainType]", one_of("vpc", "standard")),
    (ROUTE_TABLE, "vpcId"): unconstrained(_EC2 + "vpc_route_table.go ResourceRouteTable"),
    (ROUTE_TABLE, "routes[].cidrBlock"): rule(
        _EC2 + "vpc_route_table.go ResourceRouteTable: verify.ValidIPv4CIDRNetworkAddress", ipv4_cidr()
    ),
    (ROUTE_TABLE, "routes[].gatewayId"): unconstrained(_EC2 + "vpc_route_table.go ResourceRouteTable"),
    (ROUTE_TABLE, "routes[].natGatewayId"): unconstrained(_EC2 + "vpc_route_table.go ResourceRouteTable"),
    (ROUTE_TABLE_ASSOCIATION, "routeTableId"): unconstrained(
        _EC2 + "vpc_route_table_association.go resourceRouteTableAssociation"
    ),
    (ROUTE_TABLE_ASSOCIATION, "subnetId"): unconstrained(
        _EC2 + "vpc_route_table_association.go resourceRouteTableAssociation"
    ),
    (SECURITY_GROUP, "name"): rule(
        _EC2 + "vpc_security_group.go resourceSecurityGroup",
        length(0, 255),
        not_pattern(r"^sg-", "cannot begin with sg-"),
    ),
    (SECURITY_GROUP, "description"): rule(_EC2 + "vpc_security_group.go resourceSecurityGroup", length(0, 255)),
    (SECURITY_GROUP, "vpcId"): unconstrained(_EC2 + "vpc_security_group.go resourceSecurityGroup"),
    (SECURITY_GROUP, "ingress[].description"): rule(_SG_RULE_SOURCE, *_SG_RULE_DESCRIPTION),
    (SECURITY_GROUP, "egress[].description"): rule(_SG_RULE_SOURCE, *_SG_RULE_DESCRIPTION),
    (SECURITY_GROUP, "ingress[].cidrBlocks[]"): rule(
        _EC2 + "vpc_security_group.go securityGroupRuleNestedBlock: verify.ValidIPv4CIDRNetworkAddress", ipv4_cidr()
    ),
    (SECURITY_GROUP, "egress[].cidrBlocks[]"): rule(
        _EC2 + "vpc_security_group.go securityGroupRuleNestedBlock: verify.ValidIPv4CIDRNetworkAddress", ipv4_cidr()
    ),
    **{
        (SECURITY_GROUP, f"{direction}[].{field}"): unconstrained(
            _EC2 + "vpc_security_group.go securityGroupRuleNestedBlock"
        )
        for direction in ("ingress", "egress")
        for field in ("fromPort", "toPort", "protocol", "securityGroups[]")
    },
    # pulumi-eks's own rules (nodes/securitygroup.ts, cluster/cluster.ts).
    (SECURITY_GROUP_RULE, "description"): rule(_SG_RULE_SOURCE, *_SG_RULE_DESCRIPTION),
    (SECURITY_GROUP_RULE, "type"): rule(
        _EC2 + "vpc_security_group_rule.go resourceSecurityGroupRule: securityGroupRuleType_Values",
        one_of("ingress", "egress"),
    ),
    (SECURITY_GROUP_RULE, "cidrBlocks[]"): rule(
        _EC2 + "vpc_security_group_rule.go resourceSecurityGroupRule: verify.ValidIPv4CIDRNetworkAddress", ipv4_cidr()
    ),
    **{
        (SECURITY_GROUP_RULE, field): unconstrained(_EC2 + "vpc_security_group_rule.go resourceSecurityGroupRule")
        for field in ("fromPort", "toPort", "protocol")
    },
    (LAUNCH_TEMPLATE, "name"): rule(
        "internal/verify/validate.go ValidLaunchTemplateName (via " + _LT + ")",
        length(3, 125),
        pattern(r"^[0-9A-Za-z()./_\-]+$"),
    ),
    (LAUNCH_TEMPLATE, "description"): rule(_LT, length(0, 255)),
    (LAUNCH_TEMPLATE, "vpcSecurityGroupIds[]"): unconstrained(_LT),
    (LAUNCH_TEMPLATE, "blockDeviceMappings[].deviceName"): unconstrained(_LT),
    (LAUNCH_TEMPLATE, "blockDeviceMappings[].ebs.deleteOnTermination"): rule(_LT, _NULLABLE_BOOL),
    (LAUNCH_TEMPLATE, "blockDeviceMappings[].ebs.encrypted"): rule(_LT, _NULLABLE_BOOL),
    (LAUNCH_TEMPLATE, "blockDeviceMappings[].ebs.iops"): unconstrained(_LT),
    (LAUNCH_TEMPLATE, "blockDeviceMappings[].ebs.throughput"): rule(_LT, int_between(125, 1000)),
    (LAUNCH_TEMPLATE, "blockDeviceMappings[].ebs.volumeSize"): unconstrained(_LT),
    (LAUNCH_TEMPLATE, "blockDeviceMappings[].ebs.volumeType"): rule(
        _LT + ": ec2.VolumeType_Values", one_of("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3")
    ),
    (LAUNCH_TEMPLATE, "metadataOptions.httpEndpoint"): rule(
        _LT + ": enum.Validate[InstanceMetadataEndpointState]", one_of("disabled", "enabled")
    ),
    (LAUNCH_TEMPLATE, "metadataOptions.httpProtocolIpv6"): rule(
        _LT + ": enum.Validate[InstanceMetadataProtocolState]", one_of("disabled", "enabled")
    ),
    (LAUNCH_TEMPLATE, "metadataOptions.httpTokens"): rule(
        _LT + ": enum.Validate[HttpTokensState]", one_of("optional", "required")
    ),
    (LAUNCH_TEMPLATE, "metadataOptions.httpPutResponseHopLimit"): rule(_LT, int_between(1, 64)),
    # ec2.ResourceType_Values is the whole EC2 resource-type enum (lower-case, hyphenated); its shape is checked.
    (LAUNCH_TEMPLATE, "tagSpecifications[].resourceType"): rule(
        _LT + ": ec2.ResourceType_Values", pattern(r"^[a-z0-9]+(-[a-z0-9]+)*$")
    ),
    (EFS_FILE_SYSTEM, "throughputMode"): rule(
        "internal/service/efs/file_system.go resourceFileSystem: enum.Validate[ThroughputMode]",
        one_of("bursting", "provisioned", "elastic"),
    ),
    (EFS_MOUNT_TARGET, "fileSystemId"): unconstrained("internal/service/efs/mount_target.go ResourceMountTarget"),
    (EFS_MOUNT_TARGET, "subnetId"): unconstrained("internal/service/efs/mount_target.go ResourceMountTarget"),
    (EFS_MOUNT_TARGET, "securityGroups[]"): unconstrained("internal/service/efs/mount_target.go ResourceMountTarget"),
}
