"""The whole program under per-test mocks, in process: outputs, graph shape, network and cluster."""

from __future__ import annotations

import ipaddress
import json
import runpy
from collections.abc import Iterator
from typing import Any

import pulumi
import pytest

from components.facts.constants import KARPENTER_DISCOVERY_TAG, SYSTEM_NODE_LABEL_KEY, SYSTEM_NODE_LABEL_VALUE
from components.settings import StackSettings, load_settings
from offline.config_files import read_stack_config
from offline.mocks import RecordingMonitor, Registration
from offline.plan import Plan
from offline.runner import install_mocks
from tests.conftest import PROJECT_DIR, STACKS, run_program
from tests.support.settings import settings_for


@pytest.fixture
def mocked_stack(request: pytest.FixtureRequest) -> Iterator[tuple[StackSettings, RecordingMonitor]]:
    """Fresh mocks and config for one stack, per test: nothing carries over between tests."""
    stack = request.param
    config = read_stack_config(PROJECT_DIR, stack)
    settings = load_settings(config.values)
    monitor = install_mocks(config.project, stack, settings.region, config.values, list(config.secret_keys))
    yield settings, monitor
    pulumi.runtime.settings.reset_options()


def _by_type(registrations: list[Registration], type_token: str) -> list[Registration]:
    return [r for r in registrations if r.type == type_token]


@pytest.mark.parametrize("mocked_stack", STACKS, indirect=True)
def test_whole_program_under_mocks(mocked_stack: tuple[StackSettings, RecordingMonitor]) -> None:
    settings, monitor = mocked_stack
    checked: list[str] = []

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        namespace = run_program()
        cluster, network = namespace["cluster"], namespace["network"]

        def verify(values: list[Any]) -> None:
            cluster_name, node_sg, kubeconfig, private_ids, public_ids = values
            assert cluster_name == settings.cluster_name
            assert node_sg.startswith("sg-")
            assert json.loads(kubeconfig)["kind"] == "Config"
            assert len(private_ids) == len(public_ids) == settings.network.availability_zones
            checked.append(cluster_name)

        return pulumi.Output.all(
            cluster.eks.eks_cluster.name,
            cluster.eks.node_security_group_id,
            cluster.eks.kubeconfig_json,
            network.private_subnet_ids,
            network.public_subnet_ids,
        ).apply(verify)

    program()
    assert checked == [settings.cluster_name], "the Output assertions ran"

    registrations = monitor.registrations
    urns = {r.urn for r in registrations}
    assert len(urns) == len(registrations)
    (cluster_component,) = _by_type(registrations, "gpu-platform:cluster:Cluster")
    (network_component,) = _by_type(registrations, "gpu-platform:network:Network")
    (eks_cluster,) = _by_type(registrations, "eks:index:Cluster")
    assert eks_cluster.parent == cluster_component.urn
    assert eks_cluster.inputs["name"] == settings.cluster_name
    for registration in registrations:
        if registration.type.startswith("aws:ec2/") and registration.parent == network_component.urn:
            assert registration.custom
    vpc = next(r for r in registrations if r.type == "aws:ec2/vpc:Vpc")
    assert vpc.urn in eks_cluster.dependencies, "the cluster waits for the VPC through its inputs"
    (provider,) = _by_type(registrations, "pulumi:providers:kubernetes")
    assert eks_cluster.urn in provider.dependencies


# --- network and cluster, from the recorded plan ---------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_network_layout_and_discovery_tags(plans: dict[str, Plan], stack: str) -> None:
    plan, settings = plans[stack], settings_for(stack)
    vpc_cidr = ipaddress.IPv4Network(settings.network.vpc_cidr)
    subnets = plan.of_type("aws:ec2/subnet:Subnet")
    private = [s for s in subnets if "-private-" in s["name"]]
    public = [s for s in subnets if "-public-" in s["name"]]
    zones = settings.network.availability_zones
    assert len(private) == len(public) == zones
    assert len({s["inputs"]["availabilityZone"] for s in private}) == zones
    cidrs = [ipaddress.IPv4Network(s["inputs"]["cidrBlock"]) for s in subnets]
    assert all(c.subnet_of(vpc_cidr) for c in cidrs)
    assert not any(a.overlaps(b) for i, a in enumerate(cidrs) for b in cidrs[i + 1 :])
    for subnet in private:
        assert subnet["inputs"]["tags"][KARPENTER_DISCOVERY_TAG] == settings.cluster_name
        assert subnet["inputs"]["tags"]["kubernetes.io/role/internal-elb"] == "1"
    for subnet in public:
        assert KARPENTER_DISCOVERY_TAG not in subnet["inputs"]["tags"]
        assert subnet["inputs"]["tags"]["kubernetes.io/role/elb"] == "1"
    nat_count = 1 if settings.network.nat_gateways == "single" else zones
    assert len(plan.of_type("aws:ec2/natGateway:NatGateway")) == nat_count
    for table in plan.of_type("aws:ec2/routeTable:RouteTable"):
        (route,) = table["inputs"]["routes"]
        assert route["cidrBlock"] == "0.0.0.0/0"
        assert ("natGatewayId" in route) == ("-private-" in table["name"])


@pytest.mark.parametrize("stack", STACKS)
def test_cluster_is_private_first_encrypted_and_api_authenticated(plans: dict[str, Plan], stack: str) -> None:
    plan, settings = plans[stack], settings_for(stack)
    inputs = plan.one("eks:index:Cluster", "cluster-eks")["inputs"]
    key = plan.one("aws:kms/key:Key", "cluster-secrets")
    assert key["inputs"]["enableKeyRotation"] is True
    assert inputs["encryptionConfigKeyArn"].startswith("arn:aws:kms:")
    assert plan.one("eks:index:Cluster", "cluster-eks")["dependencies"].count(key["urn"]) == 1
    assert inputs["version"] == settings.kubernetes_version
    assert inputs["authenticationMode"] == "API"
    assert inputs["endpointPrivateAccess"] is True
    assert inputs["publicAccessCidrs"] == settings.cluster.public_access_cidrs
    assert "0.0.0.0/0" not in inputs["publicAccessCidrs"]
    assert inputs["enabledClusterLogTypes"] == settings.cluster.log_types
    assert inputs["createOidcProvider"] is False  # Pod Identity, not IRSA: no IAM OIDC provider
    assert inputs["skipDefaultNodeGroup"] is True
    assert inputs["nodeSecurityGroupTags"] == {KARPENTER_DISCOVERY_TAG: settings.cluster_name}
    assert inputs["upgradePolicy"] == {"supportType": "STANDARD"}
    # Admins' entries are top-level resources of components/access.py (one entry per principal).
    assert "accessEntries" not in inputs


@pytest.mark.parametrize("stack", STACKS)
def test_add_ons(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    inputs = plan.one("eks:index:Cluster", "cluster-eks")["inputs"]
    # vpc-cni with prefix delegation, so nodes can hold the pods-per-node GPU nodes are set to.
    assert inputs["vpcCniOptions"]["enablePrefixDelegation"] is True
    assert inputs["vpcCniOptions"]["enableNetworkPolicy"] is True, "NetworkPolicies are enforced"
    assert inputs["kubeProxyAddonOptions"]["enabled"] is True
    addon = plan.one("aws:eks/addon:Addon", "cluster-pod-identity-agent")
    assert addon["inputs"]["addonName"] == "eks-pod-identity-agent"
    # CoreDNS (a Deployment) is managed only once nodes exist to run it; inside eks.Cluster it would be
    # created before any node and time out DEGRADED.
    assert inputs["corednsAddonOptions"]["enabled"] is False
    coredns = plan.one("aws:eks/addon:Addon", "cluster-coredns")
    assert coredns["inputs"]["addonName"] == "coredns"
    assert coredns["inputs"]["resolveConflictsOnCreate"] == "OVERWRITE"
    assert plan.one("eks:index:ManagedNodeGroup", "cluster-system")["urn"] in coredns["dependencies"]


@pytest.mark.parametrize("stack", STACKS)
def test_control_plane_logs_expire(plans: dict[str, Plan], stack: str) -> None:
    plan, settings = plans[stack], settings_for(stack)
    log_group = plan.one("aws:cloudwatch/logGroup:LogGroup", "cluster-control-plane-logs")
    # The name EKS writes to, created first so EKS does not create one without retention.
    assert log_group["inputs"]["name"] == f"/aws/eks/{settings.cluster_name}/cluster"
    assert 1 <= log_group["inputs"]["retentionInDays"] <= 400
    assert log_group["urn"] in plan.one("eks:index:Cluster", "cluster-eks")["dependencies"]


@pytest.mark.parametrize("stack", STACKS)
def test_system_node_group(plans: dict[str, Plan], stack: str) -> None:
    plan, settings = plans[stack], settings_for(stack)
    group = plan.one("eks:index:ManagedNodeGroup", "cluster-system")
    inputs = group["inputs"]
    scaling = inputs["scalingConfig"]
    assert scaling["minSize"] >= 2 and scaling == {
        "minSize": settings.system_nodes.min_size,
        "desiredSize": settings.system_nodes.desired_size,
        "maxSize": settings.system_nodes.max_size,
    }
    assert inputs["labels"] == {SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE}
    assert "taints" not in inputs
    private_ids = [
        s["urn"].split("::")[-1] + "-id" for s in plan.of_type("aws:ec2/subnet:Subnet") if "-private-" in s["name"]
    ]
    assert inputs["subnetIds"] == private_ids
    template = plan.one("aws:ec2/launchTemplate:LaunchTemplate", "cluster-system")
    # The mock answers a template's id as "<name>-id" and its latestVersion as 1.
    assert inputs["launchTemplate"] == {"id": f"{template['name']}-id", "version": "1"}
    assert template["urn"] in group["dependencies"]
    assert inputs["version"] == settings.kubernetes_version, "system nodes follow the control plane version"
    assert template["inputs"]["metadataOptions"]["httpTokens"] == "required"
    # Every node shares the node security group (the one Karpenter selects by its discovery tag).
    (security_group,) = template["inputs"]["vpcSecurityGroupIds"]
    assert security_group.startswith("sg-")
    for other in plan.of_type("aws:ec2/launchTemplate:LaunchTemplate"):
        assert other["inputs"]["vpcSecurityGroupIds"] == [security_group], other["name"]
    ebs = template["inputs"]["blockDeviceMappings"][0]["ebs"]
    assert (ebs["encrypted"], ebs["volumeType"]) == ("true", "gp3")
    role = plan.by_urn(next(d for d in group["dependencies"] if "aws:iam/role:Role" in d))
    attachments = [
        a for a in plan.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if role["urn"] in a["dependencies"]
    ]
    assert {a["urn"] for a in attachments} <= set(group["dependencies"]), "nodes join only with their policies"
    assert sorted(a["inputs"]["policyArn"].rsplit("/", 1)[1] for a in attachments) == [
        "AmazonEC2ContainerRegistryPullOnly", "AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonSSMManagedInstanceCore",
    ]  # fmt: skip


@pytest.mark.parametrize("stack", STACKS)
def test_prod_protects_foundations(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    # Pulumi.prod.yaml sets protectResources: true; staging keeps the default (false).
    protected = {"staging": False, "prod": True}[stack]
    foundations = [
        plan.one("eks:index:Cluster", "cluster-eks"),
        plan.one("aws:ec2/vpc:Vpc", "network-vpc"),
        plan.one("aws:kms/key:Key", "cluster-secrets"),
    ]
    assert [r["protect"] for r in foundations] == [protected] * 3
    assert plan.one("eks:index:Cluster", "cluster-eks")["inputs"]["deletionProtection"] is protected
    assert settings_for(stack).protect_resources is protected


def test_a_config_mistake_stops_the_program_before_any_resource() -> None:
    """What `pulumi up` shows: a RunError (printed without a traceback) naming the key; nothing registered."""
    config = read_stack_config(PROJECT_DIR, "staging")
    values = {**config.values, "gpu-platform:gpuSharing": '{"strategy": "time-slicing", "replicas": 1}'}
    monitor = install_mocks(config.project, "staging", "us-west-1", values, [])
    try:
        with pytest.raises(pulumi.RunError, match=r"gpu-platform:gpuSharing\.replicas: must be 2\.\.64"):
            runpy.run_path(str(PROJECT_DIR / "__main__.py"), run_name="__main__")  # stops before any resource
        assert monitor.registrations == []
    finally:
        pulumi.runtime.settings.reset_options()
