"""Karpenter object renderers (no mocks): CRD-valid for every stack, and the GPU facts they encode."""

from __future__ import annotations

import email
import email.policy
from typing import Any

import pytest

from components.facts import gpu_catalog
from components.facts.constants import (
    GPU_RESOURCE,
    GPU_TAINT,
    KARPENTER_DISCOVERY_TAG,
    KARPENTER_SERVICE_ACCOUNT,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    gpu_node_labels,
)
from components.karpenter import controller_inputs, gpu_node_pool, node_class_basis
from components.renderers.karpenter import karpenter_manifests, karpenter_values
from components.renderers.nodes.gpu_bootstrap import render_gpu_user_data
from components.settings import StackSettings
from tests.conftest import STACKS
from tests.support.crd_validation import validate_custom_resource
from tests.support.settings import settings_for

NODE_ROLE = "lab-karpenter-node"


def rendered_objects(settings: StackSettings) -> list[dict[str, Any]]:
    objects = []
    for pool in settings.karpenter.node_pools:
        objects.append(gpu_node_pool(settings.resolved.pool(pool.name)))
        objects.append(
            karpenter_manifests.node_class(
                pool, settings.resolved.pool(pool.name).sharing, node_class_basis(settings), node_role_name=NODE_ROLE
            )
        )
        objects.extend(karpenter_manifests.node_overlays(pool, settings.resolved.pool(pool.name).sharing))
    return objects


def pool_config(**fields: Any) -> dict[str, Any]:
    return {"enabled": True, "replicas": 2, "nodePools": [{"name": "gpu", **fields}]}


# --- every object of every stack is accepted by the v1.14.1 CRDs -------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_rendered_objects_validate_against_the_crds(stack: str) -> None:
    objects = rendered_objects(settings_for(stack))
    assert {obj["kind"] for obj in objects} == {"NodePool", "EC2NodeClass", "NodeOverlay"}
    assert {obj["metadata"]["name"]: validate_custom_resource(obj) for obj in objects} == {
        obj["metadata"]["name"]: [] for obj in objects
    }


def test_exclusive_and_instance_type_pools_validate_too() -> None:
    settings = settings_for(
        "staging",
        karpenter=pool_config(
            instanceTypes=["g5.xlarge", "g5.48xlarge"], capacityTypes=["spot", "on-demand"], allowMixedGpuCounts=True
        ),
        gpuSharing={"strategy": "none", "replicas": 1},
    )
    objects = rendered_objects(settings)
    assert [obj["kind"] for obj in objects] == ["NodePool", "EC2NodeClass"]
    assert all(validate_custom_resource(obj) == [] for obj in objects)


# --- NodePool ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_node_pool_carries_the_shared_gpu_label_and_taint(stack: str) -> None:
    settings = settings_for(stack)
    for pool in settings.karpenter.node_pools:
        template = gpu_node_pool(settings.resolved.pool(pool.name))["spec"]["template"]
        assert template["metadata"]["labels"] == gpu_node_labels(settings.resolved.pool(pool.name).sharing.profile)
        assert template["spec"]["taints"] == [GPU_TAINT]
        assert template["spec"]["nodeClassRef"] == {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "name": pool.name,
        }


def _requirements(node_pool: dict[str, Any]) -> dict[str, tuple[str, list[str]]]:
    requirements = node_pool["spec"]["template"]["spec"]["requirements"]
    return {r["key"]: (r["operator"], r["values"]) for r in requirements}


def test_node_pool_requirements_and_disruption_follow_settings() -> None:
    settings = settings_for("staging")
    (pool,) = settings.karpenter.node_pools
    node_pool = gpu_node_pool(settings.resolved.pool(pool.name))
    # Expected values as Pulumi.staging.yaml's g4-nodepool states them (architectures are the settings default),
    # plus the budget window of learning-lab's 17:00 Pacific session (docs/timetable.md).
    assert _requirements(node_pool) == {
        "node.kubernetes.io/instance-type": ("In", ["g4dn.2xlarge", "g4dn.xlarge"]),
        "karpenter.k8s.aws/instance-gpu-manufacturer": ("In", ["nvidia"]),
        "karpenter.sh/capacity-type": ("In", ["on-demand"]),
        "kubernetes.io/arch": ("In", ["amd64"]),
        "kubernetes.io/os": ("In", ["linux"]),
    }
    spec = node_pool["spec"]
    assert spec["template"]["spec"]["expireAfter"] == "120m"
    assert spec["template"]["spec"]["terminationGracePeriod"] == "2h15m"
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmpty",
        "consolidateAfter": "5m",
        "budgets": [{"nodes": "1"}, {"nodes": "0", "schedule": "55 23 * * tue,thu", "duration": "3h5m"}],
    }
    assert spec["weight"] == 10


def test_family_pools_select_by_instance_family() -> None:
    # (A whole family mixes GPU counts: only with the opt-in. Prod's pools now list 1-GPU types.)
    settings = settings_for("staging", karpenter=pool_config(instanceFamilies=["g5", "g4dn"], allowMixedGpuCounts=True))
    (pool,) = settings.karpenter.node_pools
    requirements = _requirements(gpu_node_pool(settings.resolved.pool(pool.name)))
    assert requirements["karpenter.k8s.aws/instance-family"] == ("In", ["g4dn", "g5"])
    assert "node.kubernetes.io/instance-type" not in requirements


def test_prod_pools_select_their_1_gpu_types() -> None:
    settings = settings_for("prod")
    for pool in settings.karpenter.node_pools:
        requirements = _requirements(gpu_node_pool(settings.resolved.pool(pool.name)))
        assert requirements["node.kubernetes.io/instance-type"] == ("In", sorted(pool.instance_types))
        assert "karpenter.k8s.aws/instance-family" not in requirements


def test_scheduled_budgets_keep_schedule_and_duration() -> None:
    settings = settings_for("prod")
    pool = next(p for p in settings.karpenter.node_pools if len(p.disruption_budgets) > 1)
    budgets = gpu_node_pool(settings.resolved.pool(pool.name))["spec"]["disruption"]["budgets"]
    # Pulumi.prod.yaml's t4-shared budgets, as written there, then vision-lab's 09:00 Pacific session window
    # (08:54 PDT = 15:54 UTC, 6m lead + 3h + 1h for PST).
    assert budgets == [
        {"nodes": "10%"},
        {"nodes": "0", "schedule": "0 15 * * mon-fri", "duration": "11h"},
        {"nodes": "0", "schedule": "54 15 * * mon,wed,fri", "duration": "4h6m"},
    ]


@pytest.mark.parametrize("stack", STACKS)
def test_gpu_limit_counts_physical_gpus_in_shared_units(stack: str) -> None:
    """A sharing node advertises GPUs x replicas, so gpuLimit physical GPUs = gpuLimit x replicas units."""
    settings = settings_for(stack)
    for pool in settings.karpenter.node_pools:
        limits = gpu_node_pool(settings.resolved.pool(pool.name))["spec"]["limits"]
        assert limits == {
            "cpu": str(pool.cpu_limit),
            GPU_RESOURCE: str(pool.gpu_limit * settings.resolved.pool(pool.name).sharing.replicas),
        }


# --- NodeOverlay: the capacity math --------------------------------------------------------------------------------


@pytest.mark.parametrize("replicas", [2, 3, 4, 7])
def test_overlay_capacity_is_gpus_times_replicas_for_1_4_and_8_gpu_types(replicas: int) -> None:
    instance_types = ["g6.xlarge", "g6.12xlarge", "g6.48xlarge"]
    settings = settings_for(
        "staging",
        karpenter=pool_config(instanceTypes=instance_types, allowMixedGpuCounts=True),
        gpuSharing={"strategy": "time-slicing", "replicas": replicas},
    )
    (pool,) = settings.karpenter.node_pools
    overlays = karpenter_manifests.node_overlays(pool, settings.resolved.pool(pool.name).sharing)
    by_gpu_count = {}
    for overlay in overlays:
        requirements = {r["key"]: r for r in overlay["spec"]["requirements"]}
        assert requirements["karpenter.sh/nodepool"] == {
            "key": "karpenter.sh/nodepool",
            "operator": "In",
            "values": ["gpu"],
        }
        (gpus,) = requirements["karpenter.k8s.aws/instance-gpu-count"]["values"]
        by_gpu_count[int(gpus)] = overlay["spec"]["capacity"]
    physical = sorted({gpu_catalog.gpu_count(t) for t in instance_types})
    assert physical == [1, 4, 8]
    assert by_gpu_count == {
        g: {GPU_RESOURCE: str(g * settings.resolved.pool(pool.name).sharing.replicas)} for g in physical
    }
    assert all(validate_custom_resource(o) == [] for o in overlays)


def test_one_overlay_per_distinct_gpu_count_with_unique_names() -> None:
    settings = settings_for("prod")
    names = []
    for pool in settings.karpenter.node_pools:
        overlays = karpenter_manifests.node_overlays(pool, settings.resolved.pool(pool.name).sharing)
        counts = [o["spec"]["requirements"][1]["values"] for o in overlays]
        if settings.resolved.pool(pool.name).slot_kind == "g6f":  # one overlay by family: EC2 reports g6f's GPUs as 0
            assert counts == [["g6f"]]
        else:
            assert counts == [[str(g)] for g in sorted(set(map(gpu_catalog.gpu_count, pool.selected_instance_types)))]
        names += [o["metadata"]["name"] for o in overlays]
    assert len(names) == len(set(names))


def test_pool_override_replicas_are_the_ones_used() -> None:
    """prod's a10g pool overrides the stack sharing: its overlays use its own replicas (one source)."""
    settings = settings_for("prod")
    pool = next(p for p in settings.karpenter.node_pools if p.gpu_sharing is not None)
    assert pool.gpu_sharing is not None and pool.gpu_sharing.replicas != settings.gpu_sharing.replicas
    capacities = [
        o["spec"]["capacity"][GPU_RESOURCE]
        for o in karpenter_manifests.node_overlays(pool, settings.resolved.pool(pool.name).sharing)
    ]
    gpus = karpenter_manifests.pool_gpu_counts(pool)
    assert capacities == [str(g * pool.gpu_sharing.replicas) for g in gpus]


def test_no_overlays_and_no_feature_gate_without_sharing() -> None:
    settings = settings_for(
        "staging",
        karpenter=pool_config(instanceFamilies=["g5"], allowMixedGpuCounts=True),
        gpuSharing={"strategy": "none", "replicas": 1},
    )
    (pool,) = settings.karpenter.node_pools
    assert karpenter_manifests.node_overlays(pool, settings.resolved.pool(pool.name).sharing) == []
    values = karpenter_values.helm_values(
        controller_inputs(settings), cluster_endpoint="https://x", interruption_queue="q"
    )
    assert values["settings"]["featureGates"]["nodeOverlay"] is False


# --- EC2NodeClass ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_node_class_launches_pinned_al2023_with_imdsv2_and_encrypted_root(stack: str) -> None:
    settings = settings_for(stack)
    volume = settings.gpu_nodes.root_volume
    for pool in settings.karpenter.node_pools:
        node_class = karpenter_manifests.node_class(
            pool, settings.resolved.pool(pool.name).sharing, node_class_basis(settings), node_role_name=NODE_ROLE
        )
        spec = node_class["spec"]
        assert node_class["metadata"]["name"] == pool.name
        # A pinned release (never @latest), the one the managed GPU group runs too.
        assert spec["amiSelectorTerms"] == [{"alias": "al2023@v20260724"}]
        assert spec["role"] == NODE_ROLE and "instanceProfile" not in spec
        discovery = [{"tags": {KARPENTER_DISCOVERY_TAG: settings.cluster_name}}]
        assert spec["subnetSelectorTerms"] == discovery
        assert spec["securityGroupSelectorTerms"] == discovery
        assert spec["metadataOptions"]["httpTokens"] == "required"
        assert spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
        assert spec["metadataOptions"]["httpEndpoint"] == "enabled"
        assert spec["blockDeviceMappings"] == [
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {
                    "volumeSize": f"{volume.size_gib}Gi",
                    "volumeType": "gp3",
                    "iops": volume.iops,
                    "throughput": volume.throughput_mibps,
                    "encrypted": True,
                    "deleteOnTermination": volume.delete_on_termination,
                },
            }
        ]
        assert spec["kubelet"] == {"maxPods": settings.gpu_nodes.max_pods}


@pytest.mark.parametrize("stack", STACKS)
def test_node_class_user_data_is_the_shared_gpu_bootstrap(stack: str) -> None:
    settings = settings_for(stack)
    for pool in settings.karpenter.node_pools:
        labels = gpu_node_labels(settings.resolved.pool(pool.name).sharing.profile)
        user_data = karpenter_manifests.node_class(
            pool, settings.resolved.pool(pool.name).sharing, node_class_basis(settings), node_role_name=NODE_ROLE
        )["spec"]["userData"]
        assert user_data == render_gpu_user_data(
            settings.gpu_node_bootstrap, launched_by="karpenter", node_labels=labels
        )
        message = email.message_from_string(user_data, policy=email.policy.default)
        assert message.get_content_type() == "multipart/mixed" and not message.defects
        assert "application/node.eks.aws" in [part.get_content_type() for part in message.iter_parts()]


def test_node_class_drops_tags_karpenter_owns() -> None:
    tags = {
        "team": "ml",
        "eks:eks-cluster-name": "x",
        "kubernetes.io/cluster/x": "owned",
        "karpenter.sh/nodepool": "p",
        "karpenter.sh/nodeclaim": "c",
        "karpenter.k8s.aws/ec2nodeclass": "n",
        "Name": "gpu-node",
    }
    settings = settings_for("staging", tags=tags)
    (pool,) = settings.karpenter.node_pools
    node_class = karpenter_manifests.node_class(
        pool, settings.resolved.pool(pool.name).sharing, node_class_basis(settings), node_role_name=NODE_ROLE
    )
    assert node_class["spec"]["tags"] == {"Name": "gpu-node", "team": "ml"}
    assert validate_custom_resource(node_class) == []


# --- Helm values -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_helm_values_wire_the_cluster_and_keep_the_controller_on_system_nodes(stack: str) -> None:
    settings = settings_for(stack)
    values = karpenter_values.helm_values(
        controller_inputs(settings), cluster_endpoint="https://api.example", interruption_queue=settings.cluster_name
    )
    assert values["settings"] == {
        "clusterName": settings.cluster_name,
        "clusterEndpoint": "https://api.example",
        "interruptionQueue": settings.cluster_name,
        # Staging keeps warm GPU slots (CapacityBuffer); both stacks' lab timetables raise buffers.
        "featureGates": {"nodeOverlay": True, "nodeRepair": True, "capacityBuffer": True, "reservedCapacity": False},
    }
    assert values["replicas"] == 2  # both stack files
    assert values["serviceAccount"] == {"name": KARPENTER_SERVICE_ACCOUNT}
    assert values["nodeSelector"][SYSTEM_NODE_LABEL_KEY] == SYSTEM_NODE_LABEL_VALUE
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    # Every term (they are ORed) keeps the controller off Karpenter's own nodes.
    assert terms and all(
        {"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"} in term["matchExpressions"] for term in terms
    )
    assert values["topologySpreadConstraints"] == [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
    ]
    resources = values["controller"]["resources"]
    assert resources["requests"] == resources["limits"] == {"cpu": "1", "memory": "1Gi"}
    # The region comes from settings: at IMDS hop limit 1 the controller pod cannot look it up.
    assert {"name": "AWS_REGION", "value": settings.region} in values["controller"]["env"]
