"""The learners' CPU user pool (components/renderers/karpenter/cpu_user_pool_manifests.py): its NodePool and EC2NodeClass
against the Karpenter v1.14.1 CRDs (schema + CEL), z2jh's user label and taint, the CPU notebook's selector and
toleration matching them (and nothing else landing there), and its place in the plan."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from components.facts.constants import GPU_TAINT, USER_NODE_LABEL_KEY, USER_NODE_LABEL_VALUE, USER_TAINT
from components.renderers.hub import hub_profiles
from components.renderers.karpenter import cpu_user_pool_manifests
from components.settings import CpuUserPoolSettings
from offline.plan import Plan
from tests.conftest import STACKS, shared_path
from tests.support.crd_validation import validate_custom_resource
from tests.support.k8s_validation import pod_can_land_on, tolerates
from tests.support.settings import settings_for

ROLE = "cluster-karpenter-node"
POOLS = [
    CpuUserPoolSettings(),
    CpuUserPoolSettings(name="learners", capacity_type="spot", instance_types=["c7i.xlarge"], cpu_limit=4,
                        consolidate_after="30s", expire_after="Never", termination_grace_period="8h"),
]  # fmt: skip


@pytest.mark.parametrize("pool", POOLS, ids=["defaults", "spot"])
def test_the_pool_and_its_node_class_pass_the_v1_14_1_crds(pool: CpuUserPoolSettings) -> None:
    node_pool = cpu_user_pool_manifests.node_pool(pool)
    node_class = cpu_user_pool_manifests.node_class(pool, "cluster", {"team": "ml"}, node_role_name=ROLE)
    assert validate_custom_resource(node_pool) == [] and validate_custom_resource(node_class) == []
    requirements = {r["key"]: r for r in node_pool["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"]["values"] == [pool.capacity_type]
    assert requirements["node.kubernetes.io/instance-type"]["values"] == sorted(pool.instance_types)
    assert requirements["karpenter.k8s.aws/instance-gpu-count"]["operator"] == "DoesNotExist"
    assert node_pool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert node_pool["spec"]["template"]["spec"]["nodeClassRef"]["name"] == node_class["metadata"]["name"] == pool.name


def test_the_node_class_is_hardened_like_the_gpu_pools() -> None:
    spec = cpu_user_pool_manifests.node_class(CpuUserPoolSettings(), "cluster", {}, node_role_name=ROLE)["spec"]
    (root,) = spec["blockDeviceMappings"]
    assert root["rootVolume"] and root["ebs"]["encrypted"] and root["ebs"]["volumeType"] == "gp3"
    assert (
        spec["metadataOptions"]["httpTokens"] == "required" and spec["metadataOptions"]["httpPutResponseHopLimit"] == 1
    )
    assert spec["role"] == ROLE and "userData" not in spec  # Karpenter's own nodeadm config; standard AMI variant
    assert spec["amiSelectorTerms"][0]["alias"].startswith("al2023@v")


def test_label_and_taint_are_z2jh_user_node_conventions() -> None:
    """z2jh 4.4.0: `scheduling.userPods.tolerations` tolerate hub.jupyter.org/dedicated=user:NoSchedule and
    `matchNodePurpose` matches hub.jupyter.org/node-purpose=user (values.yaml, jupyterhub_config.py)."""
    values = yaml.safe_load(shared_path("schemas/jupyterhub/4.4.0/values.yaml").read_text(encoding="utf-8"))
    user_pods = values["scheduling"]["userPods"]["tolerations"]
    assert {**USER_TAINT, "operator": "Equal"} in user_pods
    config = shared_path("schemas/jupyterhub/4.4.0/jupyterhub_config.py").read_text(encoding="utf-8")
    assert f'key="{USER_NODE_LABEL_KEY}"' in config and f'values=["{USER_NODE_LABEL_VALUE}"]' in config
    template = cpu_user_pool_manifests.node_pool(CpuUserPoolSettings())["spec"]["template"]
    assert template["metadata"]["labels"] == {USER_NODE_LABEL_KEY: USER_NODE_LABEL_VALUE}
    assert template["spec"]["taints"] == [USER_TAINT]


def test_only_the_cpu_profile_lands_on_the_pool() -> None:
    template = cpu_user_pool_manifests.node_pool(CpuUserPoolSettings())["spec"]["template"]
    labels, (taint,) = template["metadata"]["labels"], template["spec"]["taints"]
    cpu = hub_profiles.kubespawner_override(hub_profiles.cpu_profile())
    spec: dict[str, Any] = {"nodeSelector": cpu["node_selector"], "tolerations": cpu["tolerations"]}
    assert pod_can_land_on(spec, labels) and any(tolerates(t, taint) for t in spec["tolerations"])
    assert not any(tolerates(t, GPU_TAINT) for t in spec["tolerations"])
    # The system nodes carry neither the label nor the taint: the notebook cannot go there.
    assert not pod_can_land_on(spec, {"gpu-platform.io/node-role": "system"})


def test_both_plans_hold_the_pool_and_the_hubs_stay_on_system_nodes(plans: dict[str, Plan]) -> None:
    for stack in STACKS:
        settings = settings_for(stack)
        assert settings.cpu_user_pool_enabled
        name = settings.karpenter.cpu_user_pool.name
        (node_pool,) = [p for p in plans[stack].objects("NodePool") if p["metadata"]["name"] == name]
        assert node_pool == cpu_user_pool_manifests.node_pool(settings.karpenter.cpu_user_pool)
        for chart in plans[stack].helm:
            if chart["name"] == "jupyterhub":
                assert chart["values"]["hub"]["nodeSelector"] == {"gpu-platform.io/node-role": "system"}
                assert chart["values"]["proxy"]["chp"]["nodeSelector"] == {"gpu-platform.io/node-role": "system"}
