"""The managed GPU node group: a fixed floor of tainted GPU capacity (Karpenter adds the rest).

Launch template (IMDSv2, encrypted gp3 root volume, the AL2023 GPU userData) + an EKS managed node
group on the EKS-optimized NVIDIA AMI (`amiType`, no `image_id`) + its node IAM role.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

from components.facts.constants import (
    GPU_TAINT_EFFECT_EKS,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    al2023_release_version,
    gpu_node_labels,
    managed_gpu_node_group_name,
)
from components.renderers.nodes.gpu_bootstrap import render_gpu_user_data
from components.resources.launch_template import node_launch_template
from components.resources.node_repair import node_repair_transforms
from components.resources.node_role import create_node_role
from components.settings import StackSettings

# EKS-optimized AL2023 AMI with the NVIDIA driver, container toolkit and the nodeadm bootstrap.
GPU_AMI_TYPE = "AL2023_x86_64_NVIDIA"


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
        labels = gpu_node_labels(settings.gpu_sharing.profile)
        physical_name = managed_gpu_node_group_name(cluster_name)
        self.launch_template = node_launch_template(
            f"{name}-lt",
            physical_name=physical_name,
            description="GPU node group: IMDSv2, encrypted gp3 root volume, AL2023 nodeadm GPU bootstrap",
            root_volume=settings.gpu_nodes.root_volume,
            security_group_id=args.cluster.node_security_group_id,
            tags=settings.tags,
            parent=self,
            user_data=render_gpu_user_data(
                settings.gpu_node_bootstrap, launched_by="managed-node-group", node_labels=labels
            ),
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
            # The same AL2023 release (NVIDIA driver, kernel) Karpenter's EC2NodeClass pins, not "latest".
            release_version=al2023_release_version(settings.kubernetes_version),
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
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=node_role.attachments, transforms=node_repair_transforms(settings.observability)
            ),
        )

        self.register_outputs(
            {
                "launchTemplateId": self.launch_template.id,
                "launchTemplateVersion": self.launch_template.latest_version,
                "nodeRoleArn": self.node_role.arn,
            }
        )
