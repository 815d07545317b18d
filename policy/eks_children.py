"""The `aws:*` children pulumi-eks makes from the component inputs the program sets, which the mocks never see.

`eks:index:Cluster` and `eks:index:ManagedNodeGroup` are remote components: the engine runs pulumi-eks's own
Node.js code, which registers the cluster, its IAM role, security groups and rules, add-ons and node groups.
Each function below reproduces, for the inputs this program sets, the inputs those children receive, as
pulumi/pulumi-eks writes them at v4.4.0 (nodejs/eks; the tree of master @ 7bf0c1b1, whose nodejs/eks sources
equal v4.3.0's: v4.4.0 is not on the npm registry reachable here). Values pulumi-eks computes from other
resources (ARNs, IDs, versions looked up at preview) are left out: unknown at preview, the provider skips them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from components.facts.aws_rules.network import SECURITY_GROUP, SECURITY_GROUP_RULE
from components.facts.aws_rules.platform import EKS_ADDON, EKS_CLUSTER, EKS_NODE_GROUP, IAM_ROLE

EKS_CLUSTER_COMPONENT = "eks:index:Cluster"
EKS_MANAGED_NODE_GROUP = "eks:index:ManagedNodeGroup"
# Pulumi autonaming: the logical name, "-" and 7 random characters (a role name is checked at its full length).
AUTONAME_SUFFIX = "-" + "x" * 7

Child = tuple[str, str, dict[str, Any]]  # (type, logical name, inputs)

# nodes/securitygroup.ts createNodeGroupSecurityGroup: the node group security group's rules.
_NODE_SG_RULES = (
    ("eksNodeIngressRule", "Allow nodes to communicate with each other", "ingress", 0, 0, "-1"),
    (
        "eksNodeClusterIngressRule",
        "Allow worker Kubelets and pods to receive communication from the cluster control plane",
        "ingress", 1025, 65535, "tcp",
    ),
    (
        "eksExtApiServerClusterIngressRule",
        "Allow pods running extension API servers on port 443 to receive communication from cluster control plane",
        "ingress", 443, 443, "tcp",
    ),
    ("eksNodeInternetEgressRule", "Allow internet access.", "egress", 0, 0, "-1"),
    ("eksClusterIngressRule", "Allow pods to communicate with the cluster API Server", "ingress", 443, 443, "tcp"),
)  # fmt: skip


def _sg_rule(name: str, description: str, direction: str, low: int, high: int, protocol: str) -> Child:
    inputs: dict[str, Any] = {
        "description": description, "type": direction, "fromPort": low, "toPort": high, "protocol": protocol,
    }  # fmt: skip
    if direction == "egress":
        inputs["cidrBlocks"] = ["0.0.0.0/0"]
    return SECURITY_GROUP_RULE, name, inputs


def _addon(name: str, addon: str, cluster_name: Any, tags: Any, options: Mapping[str, Any]) -> Child:
    """cluster/cluster.ts (kube-proxy, coredns) and addons/cni-addon.ts (vpc-cni): OVERWRITE unless set."""
    return (
        EKS_ADDON,
        name,
        {
            "addonName": addon,
            "clusterName": cluster_name,
            "resolveConflictsOnCreate": options.get("resolveConflictsOnCreate", "OVERWRITE"),
            "resolveConflictsOnUpdate": options.get("resolveConflictsOnUpdate", "OVERWRITE"),
            "tags": tags,
        },
    )


def cluster_children(name: str, props: Mapping[str, Any]) -> list[Child]:
    """cluster/cluster.ts createCore and createCluster, for a cluster without Auto Mode or Fargate."""
    tags = dict(props.get("tags") or {})
    cluster_name = props.get("name")
    children: list[Child] = [
        # createCore: ServiceRole `${name}-eksRole` (servicerole.ts: aws.iam.Role `${name}-role`).
        (IAM_ROLE, f"{name}-eksRole-role", {
            "name": f"{name}-eksRole-role{AUTONAME_SUFFIX}",
            "description": "Allows EKS to manage clusters on your behalf.",
            "tags": tags,
        }),
        (EKS_CLUSTER, f"{name}-eksCluster", {
            "name": cluster_name,
            "version": props.get("version"),
            "enabledClusterLogTypes": props.get("enabledClusterLogTypes"),
            "vpcConfig": {"publicAccessCidrs": props.get("publicAccessCidrs")},
            "accessConfig": {"authenticationMode": props.get("authenticationMode")},
            "upgradePolicy": props.get("upgradePolicy"),
            "encryptionConfig": {"resources": ["secrets"]} if props.get("encryptionConfigKeyArn") else None,
            "tags": {"Name": f"{name}-eksCluster", **(props.get("clusterTags") or {}), **tags},
        }),
    ]  # fmt: skip
    if not props.get("skipDefaultSecurityGroups"):
        children += [
            (SECURITY_GROUP, f"{name}-eksClusterSecurityGroup", {
                "tags": {"Name": f"{name}-eksClusterSecurityGroup", **(props.get("clusterSecurityGroupTags") or {}),
                         **tags},
            }),
            _sg_rule(f"{name}-eksClusterInternetEgressRule", "Allow internet access.", "egress", 0, 0, "-1"),
            # createNodeGroupSecurityGroup(name, ...): tags {Name, kubernetes.io/cluster/<cluster>: owned, ...}.
            (SECURITY_GROUP, f"{name}-nodeSecurityGroup", {
                "tags": {"Name": f"{name}-nodeSecurityGroup", f"kubernetes.io/cluster/{cluster_name}": "owned",
                         **(props.get("nodeSecurityGroupTags") or {}), **tags},
            }),
            *(_sg_rule(f"{name}-{rule}", text, way, low, high, proto) for rule, text, way, low, high, proto in _NODE_SG_RULES),
        ]  # fmt: skip
    kube_proxy = props.get("kubeProxyAddonOptions") or {}
    if kube_proxy.get("enabled", True):
        children.append(_addon(f"{name}-kube-proxy", "kube-proxy", cluster_name, tags, kube_proxy))
    coredns = props.get("corednsAddonOptions") or {}
    if coredns.get("enabled") is True or (coredns.get("enabled", True) and not props.get("skipDefaultNodeGroup")):
        children.append(_addon(f"{name}-coredns", "coredns", cluster_name, tags, coredns))
    if not props.get("useDefaultVpcCni"):  # `vpcCniAddonEnabled`: the add-on unless the default CNI is kept
        children.append(_addon(f"{name}-vpc-cni", "vpc-cni", cluster_name, tags, props.get("vpcCniOptions") or {}))
    return children


# nodes/nodegroup.ts createManagedNodeGroupInternal: the component's args, less `cluster`, pass through.
_NODE_GROUP_FIELDS = ("nodeGroupName", "amiType", "instanceTypes", "labels", "scalingConfig", "tags", "version")


def managed_node_group_children(name: str, props: Mapping[str, Any], cluster_name: Any) -> list[Child]:
    inputs = {field: props[field] for field in _NODE_GROUP_FIELDS if field in props}
    inputs["clusterName"] = cluster_name  # `args.clusterName || core.cluster.name`
    if isinstance(props.get("launchTemplate"), Mapping):
        inputs["launchTemplate"] = dict(props["launchTemplate"])
    return [(EKS_NODE_GROUP, name, inputs)]


def children(resource: Mapping[str, Any], names_by_urn: Mapping[str, Any]) -> list[Child]:
    """The provider-facing children of one plan resource (none for anything but the pulumi-eks components).

    `names_by_urn` maps an `eks:index:Cluster` urn to the cluster name its inputs set.
    """
    props = resource["inputs"]
    if resource["type"] == EKS_CLUSTER_COMPONENT:
        return cluster_children(resource["name"], props)
    if resource["type"] == EKS_MANAGED_NODE_GROUP:
        cluster = props.get("cluster")
        cluster_name = props.get("clusterName") or names_by_urn.get(cluster if isinstance(cluster, str) else "")
        return managed_node_group_children(resource["name"], props, cluster_name)
    return []
