"""gpu-platform: settings -> network -> EKS cluster -> GPU nodes -> Karpenter -> device plugin."""

import pulumi

from components.cluster import Cluster, ClusterArgs
from components.network import Network, NetworkArgs
from components.settings import read_settings

settings = read_settings()

network = Network("network", NetworkArgs(settings=settings))
cluster = Cluster("cluster", ClusterArgs(settings=settings, network=network))

# --- GPU nodes (issue 3) ---

# --- Karpenter (issue 4) ---

# --- NVIDIA device plugin and demo (issue 5) ---

pulumi.export("clusterName", cluster.name)
pulumi.export("kubeconfig", pulumi.Output.secret(cluster.eks.kubeconfig_json))
pulumi.export("oidcProviderArn", cluster.eks.oidc_provider_arn)
pulumi.export("nodeSecurityGroupId", cluster.eks.node_security_group_id)
pulumi.export("vpcId", network.vpc_id)
pulumi.export("privateSubnetIds", network.private_subnet_ids)
pulumi.export("publicSubnetIds", network.public_subnet_ids)
