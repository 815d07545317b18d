"""The managed GPU node group: a fixed floor of tainted GPU capacity (Karpenter adds the rest).

Launch template (IMDSv2, encrypted gp3 root volume, the AL2023 GPU userData) + an EKS managed node
group on the EKS-optimized NVIDIA AMI (`amiType`, no `image_id`) + its node IAM role.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

from components.constants import GPU_TAINT_EFFECT_EKS, GPU_TAINT_KEY, GPU_TAINT_VALUE, gpu_node_labels
from components.gpu_bootstrap import render_gpu_user_data
from components.node_role import create_node_role
from components.settings import StackSettings

# EKS-optimized AL2023 AMI with the NVIDIA driver, container toolkit and the nodeadm bootstrap.
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"
# Root device of the AL2023 EKS AMIs.
ROOT_DEVICE_NAME = "/dev/xvda"


@dataclass(frozen=True)
class GpuNodeGroupArgs:
    settings: StackSettings
    cluster: eks.Cluster
    subnet_ids: pulumi.Input[Sequence[str]]


class GpuNodeGroup(pulumi.ComponentResource):
    launch_template: aws.ec2.LaunchTemplate
    node_group: eks.ManagedNodeGroup
    node_role: aws.iam.Role

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:gpu:GpuNodeGroup", name, None, opts)
        settings = args.settings
        cluster_name = settings.cluster_name
        group = settings.gpu_node_group
        root_volume = settings.gpu_nodes.root_volume
        labels = gpu_node_labels(settings.gpu_sharing.profile)
        physical_name = f"{cluster_name}-gpu"
        child = pulumi.ResourceOptions(parent=self)

        user_data = render_gpu_user_data(settings.gpu_nodes, launched_by="managed-node-group", node_labels=labels)
        self.launch_template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            name=physical_name,
            description="GPU node group: IMDSv2, encrypted gp3 root volume, AL2023 nodeadm GPU bootstrap",
            # No image_id: the node group's amiType picks the EKS NVIDIA AMI and EKS adds the cluster
            # bootstrap to this userData.
            user_data=base64.b64encode(user_data.encode("ascii")).decode("ascii"),
            metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
                http_endpoint="enabled",
                http_tokens="required",
                # 1 hop keeps pods (one hop further, behind their veth) away from the node's instance
                # credentials: they get AWS access through EKS Pod Identity. What must read IMDS on a
                # node (nodeadm, the VPC CNI, the Pod Identity agent) runs in the host network.
                http_put_response_hop_limit=1,
            ),
            block_device_mappings=[
                aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
                    device_name=ROOT_DEVICE_NAME,
                    ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                        volume_size=root_volume.size_gib,
                        volume_type="gp3",
                        iops=root_volume.iops,
                        throughput=root_volume.throughput_mibps,
                        encrypted=str(root_volume.encrypted).lower(),
                        delete_on_termination=str(root_volume.delete_on_termination).lower(),
                    ),
                )
            ],
            tag_specifications=[
                aws.ec2.LaunchTemplateTagSpecificationArgs(
                    resource_type=kind, tags={**settings.tags, "Name": physical_name}
                )
                for kind in ("instance", "volume")
            ],
            # The node security group every node shares (system, GPU and Karpenter-launched): pod
            # traffic between them (DNS to CoreDNS, GPU pods to services) must flow freely.
            vpc_security_group_ids=[args.cluster.node_security_group_id],
            tags=settings.tags,
            opts=child,
        )

        node_role = create_node_role(f"{name}-node", f"{cluster_name}-gpu-node", settings.tags, parent=self)
        self.node_role = node_role.role

        # With our own launch template pulumi-eks must not get user_data, kubelet_extra_args,
        # enable_imd_sv2 or disk_size: everything node-level lives in the template.
        self.node_group = eks.ManagedNodeGroup(
            f"{name}-mng",
            cluster=args.cluster,
            node_group_name=physical_name,
            node_role=self.node_role,
            ami_type=GPU_AMI_TYPE,
            # pulumi-eks leaves the version unset with a custom launch template; pin it to the cluster's.
            version=settings.kubernetes_version,
            instance_types=list(group.instance_types),
            capacity_type=group.capacity_type,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=group.min_size, desired_size=group.desired_size, max_size=group.max_size
            ),
            labels=labels,
            taints=[aws.eks.NodeGroupTaintArgs(key=GPU_TAINT_KEY, value=GPU_TAINT_VALUE, effect=GPU_TAINT_EFFECT_EKS)],
            subnet_ids=args.subnet_ids,
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=self.launch_template.id, version=self.launch_template.latest_version.apply(str)
            ),
            tags=settings.tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=node_role.attachments),
        )

        self.register_outputs(
            {
                "launchTemplateId": self.launch_template.id,
                "launchTemplateVersion": self.launch_template.latest_version,
                "nodeRoleArn": self.node_role.arn,
            }
        )
