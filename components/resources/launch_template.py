"""The launch template every managed node group uses: IMDSv2, an encrypted gp3 root volume, the
shared node security group, tags on instances and volumes, and (for GPU nodes) the userData."""

from __future__ import annotations

import base64
from collections.abc import Mapping

import pulumi
import pulumi_aws as aws

from components.facts.constants import (
    IMDS_HOP_LIMIT,
    IMDS_HTTP_ENDPOINT,
    IMDS_HTTP_PROTOCOL_IPV6,
    IMDS_HTTP_TOKENS,
    ROOT_DEVICE_NAME,
    ROOT_VOLUME_TYPE,
)
from components.settings import RootVolumeSettings


def node_launch_template(
    resource_name: str,
    *,
    physical_name: str,
    description: str,
    root_volume: RootVolumeSettings,
    security_group_id: pulumi.Input[str],
    tags: Mapping[str, str],
    parent: pulumi.Resource,
    user_data: str | None = None,
) -> aws.ec2.LaunchTemplate:
    """IMDSv2 as in constants.NODE_METADATA_OPTIONS. No image_id: the node group's amiType picks the EKS AMI, and EKS adds the cluster bootstrap."""
    return aws.ec2.LaunchTemplate(
        resource_name,
        name=physical_name,
        description=description,
        user_data=base64.b64encode(user_data.encode("utf-8")).decode("ascii") if user_data else None,
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            # The same values as the EC2NodeClass's NODE_METADATA_OPTIONS, in the launch template's spelling.
            http_endpoint=IMDS_HTTP_ENDPOINT,
            http_protocol_ipv6=IMDS_HTTP_PROTOCOL_IPV6,
            http_put_response_hop_limit=IMDS_HOP_LIMIT,
            http_tokens=IMDS_HTTP_TOKENS,
        ),
        block_device_mappings=[
            aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                device_name=ROOT_DEVICE_NAME,
                ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                    volume_size=root_volume.size_gib,
                    volume_type=ROOT_VOLUME_TYPE,
                    iops=root_volume.iops,
                    throughput=root_volume.throughput_mibps,
                    # The launch template API takes these booleans as strings.
                    encrypted=str(root_volume.encrypted).lower(),
                    delete_on_termination=str(root_volume.delete_on_termination).lower(),
                ),
            )
        ],
        tag_specifications=[
            aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags={**tags, "Name": physical_name})
            for kind in ("instance", "volume")
        ],
        # One node security group for every node (system, GPU, Karpenter-launched: Karpenter selects it
        # by its discovery tag), so pod traffic between them (DNS to CoreDNS, GPU pods to services) flows.
        vpc_security_group_ids=[security_group_id],
        tags=dict(tags),
        opts=pulumi.ResourceOptions(parent=parent),
    )
