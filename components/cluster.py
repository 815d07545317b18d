"""The EKS cluster: KMS-encrypted secrets, API authentication mode, add-ons, the system node group.

GPU capacity is added elsewhere (managed GPU node group, Karpenter); this component only builds
what every controller needs to run: the control plane, networking add-ons and two small nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s
from pulumi_eks import Cluster as EksCluster
from pulumi_eks import ManagedNodeGroup

from components.facts.constants import KARPENTER_DISCOVERY_TAG, SYSTEM_NODE_LABEL_KEY, SYSTEM_NODE_LABEL_VALUE
from components.network import Network
from components.resources.launch_template import node_launch_template
from components.resources.node_repair import node_repair_transforms
from components.resources.node_role import create_node_role
from components.resources.scheduler_scoring import scheduler_scoring_transforms
from components.settings import RootVolumeSettings, StackSettings

CONTROL_PLANE_LOG_RETENTION_DAYS = 90
# Controllers only: the gp3 baseline (3000 IOPS, 125 MiB/s) on a small encrypted root volume.
SYSTEM_ROOT_VOLUME = RootVolumeSettings(size_gib=40, iops=3000, throughput_mibps=125)


@dataclass(frozen=True)
class ClusterArgs:
    settings: StackSettings
    network: Network


class Cluster(pulumi.ComponentResource):
    """`cluster_name` is the physical EKS name from settings (known before deployment); the Outputs
    below resolve once the cluster exists, so resources that attach to it wait for it."""

    cluster_name: str
    eks: eks.Cluster
    eks_cluster_name: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    kubeconfig: pulumi.Output[Any]  # secret: it grants cluster access
    node_security_group_id: pulumi.Output[str]
    # The cluster's OIDC issuer (no IAM OIDC provider is created: Karpenter uses Pod Identity, not IRSA).
    oidc_issuer: pulumi.Output[str]
    secrets_key: aws.kms.Key
    provider: k8s.Provider
    system_node_group: ManagedNodeGroup
    pod_identity_agent: aws.eks.Addon
    coredns: aws.eks.Addon

    def __init__(self, name: str, args: ClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:cluster:Cluster", name, None, opts)
        settings = args.settings
        self.cluster_name = settings.cluster_name
        self.secrets_key = self._secrets_key(name, settings)
        log_group = self._control_plane_log_group(name, settings)
        self.eks = self._eks_cluster(name, args, log_group)
        self.eks_cluster_name = self.eks.eks_cluster.name
        self.endpoint = self.eks.eks_cluster.endpoint
        self.kubeconfig = pulumi.Output.secret(self.eks.kubeconfig_json)
        self.node_security_group_id = self.eks.node_security_group_id
        self.oidc_issuer = self.eks.oidc_issuer
        self.pod_identity_agent = self._pod_identity_agent(name, settings)
        self.system_node_group = self._system_node_group(name, args)
        self.coredns = self._coredns(name, settings)
        self.provider = k8s.Provider(
            f"{name}-k8s",
            kubeconfig=self.eks.kubeconfig_json,
            enable_server_side_apply=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs(
            {
                "clusterName": self.eks_cluster_name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "nodeSecurityGroupId": self.node_security_group_id,
                "oidcIssuer": self.oidc_issuer,
                "secretsKeyArn": self.secrets_key.arn,
            }
        )

    def _secrets_key(self, name: str, settings: StackSettings) -> aws.kms.Key:
        key = aws.kms.Key(
            f"{name}-secrets",
            description=f"Envelope encryption of Kubernetes secrets in EKS cluster {self.cluster_name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=settings.tags,
            opts=pulumi.ResourceOptions(parent=self, protect=settings.protect_resources),
        )
        aws.kms.Alias(
            f"{name}-secrets",
            name=f"alias/{self.cluster_name}-eks-secrets",
            target_key_id=key.key_id,
            opts=pulumi.ResourceOptions(parent=self),
        )
        return key

    def _control_plane_log_group(self, name: str, settings: StackSettings) -> aws.cloudwatch.LogGroup:
        # EKS writes control-plane logs here; created first so they expire instead of piling up forever.
        return aws.cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=f"/aws/eks/{self.cluster_name}/cluster",
            retention_in_days=CONTROL_PLANE_LOG_RETENTION_DAYS,
            tags=settings.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _eks_cluster(self, name: str, args: ClusterArgs, log_group: aws.cloudwatch.LogGroup) -> EksCluster:
        settings = args.settings
        cluster_settings = settings.cluster
        return eks.Cluster(
            f"{name}-eks",
            name=self.cluster_name,
            version=settings.kubernetes_version,
            vpc_id=args.network.vpc_id,
            private_subnet_ids=args.network.private_subnet_ids,
            public_subnet_ids=args.network.public_subnet_ids,
            skip_default_node_group=True,
            authentication_mode=eks.AuthenticationMode.API,
            # No access entries here: every principal's one entry is components/access.py's (admins included).
            # No IAM OIDC provider: the only AWS-calling pod (Karpenter) uses EKS Pod Identity, not IRSA.
            create_oidc_provider=False,
            endpoint_private_access=True,
            endpoint_public_access=cluster_settings.endpoint_public_access,
            public_access_cidrs=cluster_settings.public_access_cidrs
            if cluster_settings.endpoint_public_access
            else None,
            enabled_cluster_log_types=list(cluster_settings.log_types),
            encryption_config_key_arn=self.secrets_key.arn,
            # Karpenter selects exactly this security group for the nodes it launches.
            node_security_group_tags={KARPENTER_DISCOVERY_TAG: self.cluster_name},
            vpc_cni_options=eks.VpcCniOptionsArgs(
                enable_prefix_delegation=cluster_settings.vpc_cni.prefix_delegation,
                warm_prefix_target=1 if cluster_settings.vpc_cni.prefix_delegation else None,
                # Enforce NetworkPolicies (the device plugin and demo pods get deny-all policies).
                enable_network_policy=True,
            ),
            # CoreDNS is a Deployment: as an add-on created with the cluster, before any node exists, it
            # stays DEGRADED and times out the first `up` (pulumi-eks#1819). It is added below, after the
            # system nodes. kube-proxy and the VPC CNI are DaemonSets: healthy with zero nodes.
            coredns_addon_options=eks.CoreDnsAddonOptionsArgs(enabled=False),
            kube_proxy_addon_options=eks.KubeProxyAddonOptionsArgs(enabled=True),
            # STANDARD support: an outdated version is upgraded, not silently billed as extended support.
            upgrade_policy=aws.eks.ClusterUpgradePolicyArgs(support_type="STANDARD"),
            deletion_protection=settings.protect_resources,
            tags=settings.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=settings.protect_resources,
                depends_on=[log_group],
                # kubeSchedulerConfig on the child aws.eks.Cluster (pulumi-eks does not expose it).
                transforms=scheduler_scoring_transforms(cluster_settings),
            ),
        )

    def _pod_identity_agent(self, name: str, settings: StackSettings) -> aws.eks.Addon:
        # Karpenter's controller (and the CloudWatch agent) get their AWS credentials through EKS Pod Identity.
        return aws.eks.Addon(
            f"{name}-pod-identity-agent",
            cluster_name=self.eks_cluster_name,
            addon_name="eks-pod-identity-agent",
            tags=settings.tags,
            opts=pulumi.ResourceOptions(parent=self),
        )

    def _system_node_group(self, name: str, args: ClusterArgs) -> ManagedNodeGroup:
        settings = args.settings
        system_role = create_node_role(
            f"{name}-system-node", f"{self.cluster_name}-system-node", settings.tags, parent=self
        )
        system_template = node_launch_template(
            f"{name}-system",
            physical_name=f"{self.cluster_name}-system",
            description="System node group: IMDSv2 and an encrypted gp3 root volume",
            root_volume=SYSTEM_ROOT_VOLUME,
            security_group_id=self.node_security_group_id,
            tags=settings.tags,
            parent=self,
        )
        system = settings.system_nodes
        return ManagedNodeGroup(
            f"{name}-system",
            cluster=self.eks,
            node_group_name=f"{self.cluster_name}-system",
            # With a custom launch template pulumi-eks leaves the version unset: follow the cluster's.
            version=settings.kubernetes_version,
            node_role=system_role.role,
            ami_type="AL2023_x86_64_STANDARD",
            instance_types=list(system.instance_types),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=system.min_size, desired_size=system.desired_size, max_size=system.max_size
            ),
            labels={SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE},
            subnet_ids=args.network.private_subnet_ids,
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=system_template.id, version=system_template.latest_version.apply(str)
            ),
            tags=settings.tags,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=system_role.attachments,
                transforms=node_repair_transforms(settings.observability),
            ),
        )

    def _coredns(self, name: str, settings: StackSettings) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{name}-coredns",
            cluster_name=self.eks_cluster_name,
            addon_name="coredns",
            # Adopt the self-managed CoreDNS EKS bootstraps with the cluster.
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=settings.tags,
            # A Deployment: it needs nodes to run on (see `_eks_cluster`).
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.system_node_group]),
        )
