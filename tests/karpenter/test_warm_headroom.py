"""Warm GPU headroom: settings checks, the PodTemplate / CapacityBuffer pair per pool, where the template can
land, the nodes it holds, the controller's feature gate, the plan's order, and nodeadm FastImagePull."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.facts import gpu_catalog, node_allocatable
from components.facts.constants import (
    GPU_RESOURCE,
    GPU_TAINT,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    gpu_node_labels,
)
from components.karpenter import controller_inputs, gpu_node_pool
from components.renderers.karpenter import karpenter_manifests, karpenter_values, warm_headroom_manifests
from components.renderers.nodes.gpu_bootstrap import render_gpu_user_data
from components.settings import NodePoolSettings, SettingsError, StackSettings, load_settings
from offline.plan import Plan
from tests.support.crd_validation import validate_custom_resource
from tests.support.k8s_validation import pod_can_land_on, tolerates, validate_core_object
from tests.support.settings import config_for, settings_for
from tests.support.user_data import node_config_of

# Staging without its lab timetable (tests/timetable/test_lab_timetable.py): warm slots alone.
WARM_ALONE = ("sessions",)
STAGING = config_for("staging", labs_without=WARM_ALONE)
BUFFER_TYPE = "kubernetes:autoscaling.x-k8s.io/v1beta1:CapacityBuffer"
POD_TEMPLATE_TYPE = "kubernetes:core/v1:PodTemplate"


def problems(config: dict[str, str]) -> list[tuple[str, str]]:
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    return caught.value.problems


def two_pool_settings() -> StackSettings:
    """Staging plus a second pool of another family with warm slots of its own."""
    pools = json.loads(STAGING["gpu-platform:karpenter"])["nodePools"]
    # Drains as long as staging's pool: the lab's hub offers every pool, and its notebooks live 2h.
    l4_pool = {
        "name": "l4-pool",
        "instanceTypes": ["g6.xlarge"],
        "gpuLimit": 2,
        "warmGpuSlots": 1,
        "terminationGracePeriod": "2h15m",
    }
    return settings_for("staging", labs_without=WARM_ALONE, pools=[*pools, l4_pool])


# --- settings ------------------------------------------------------------------------------------------------


def test_staging_keeps_three_warm_slots_of_a_typical_lab_pod() -> None:
    settings = settings_for("staging", labs_without=WARM_ALONE)
    (pool,) = settings.karpenter.node_pools
    assert pool.name == "g4-nodepool"
    assert pool.warm_gpu_slots == 3
    shape = settings.resolved.pool(pool.name).warm_slot_shape
    assert (shape.cpu_millicores, shape.memory_mib) == (1000, 4096)


def test_warm_slots_default_to_none() -> None:
    pool = NodePoolSettings.model_validate({"name": "gpu", "instanceTypes": ["g4dn.xlarge"]})
    assert pool.warm_gpu_slots == 0
    assert pool.warm_slot_shape is None


NO_OBSERVABILITY = {"gpuMetrics": False, "nodeRepair": False}


def test_daemonset_requests_follow_the_settings_by_hand() -> None:
    """Base: kube-proxy 100m / 50 MiB + aws-node 25m + its network policy agent 25m + Pod Identity agent 0 + device
    plugin 50m / 64 MiB = 200m / 114 MiB; gpuMetrics adds cloudwatch-agent and dcgm-exporter (250m / 128 MiB each);
    nodeRepair adds the node monitoring agent (10m / 30 MiB) and its dcgm-server (no requests); MPS adds its
    control daemon (50m / 64 MiB)."""
    requests = node_allocatable.daemonset_requests
    base = requests(gpu_metrics=False, node_repair=False, mps=False)
    assert (base.cpu_millicores, base.memory_mib) == (200, 114)
    metrics = requests(gpu_metrics=True, node_repair=False, mps=False)
    assert (metrics.cpu_millicores, metrics.memory_mib) == (700, 370)
    repair = requests(gpu_metrics=False, node_repair=True, mps=False)
    assert (repair.cpu_millicores, repair.memory_mib) == (210, 144)
    everything = requests(gpu_metrics=True, node_repair=True, mps=True)
    assert (everything.cpu_millicores, everything.memory_mib) == (760, 464)
    running = node_allocatable.gpu_node_daemonsets(gpu_metrics=False, node_repair=True, mps=False)
    assert running["dcgm-server"] == node_allocatable.Allocatable(0, 0)


def test_allocatable_follows_karpenters_model_by_hand() -> None:
    """g4dn.xlarge, maxPods 110, staging's DaemonSets (740m / 520 MiB, the EBS CSI node pod's 30m / 120 MiB
    included): 4000m - 80m kube-reserved (60+10+5+5) - 740m = 3180m; 16384 MiB - 1229 MiB VM overhead (7.5%, rounded
    up) - 1465 MiB kube-reserved (11 x 110 + 255) - 100 MiB eviction - 520 MiB = 13070 MiB. Base DaemonSets only
    (200m / 114 MiB): 3720m / 13476 MiB."""
    staging = node_allocatable.Allocatable(740, 520)
    room = node_allocatable.pod_allocatable("g4dn.xlarge", max_pods=110, daemonsets=staging)
    assert (room.cpu_millicores, room.memory_mib) == (3180, 13070)
    base = node_allocatable.Allocatable(200, 114)
    room = node_allocatable.pod_allocatable("g4dn.xlarge", max_pods=110, daemonsets=base)
    assert (room.cpu_millicores, room.memory_mib) == (3720, 13476)
    assert node_allocatable.kube_reserved_cpu_millicores(48) == 60 + 10 + 10 + 110


def test_staging_pool_allocatable_counts_its_observability_daemonsets() -> None:
    settings = settings_for("staging", labs_without=WARM_ALONE)
    (pool,) = settings.karpenter.node_pools
    room = settings.resolved.pool(pool.name).node("g4dn.xlarge").allocatable
    assert (room.cpu_millicores, room.memory_mib) == (3180, 13070)


def test_default_shape_shrinks_until_a_node_holds_all_its_slots() -> None:
    """Four pods per T4 with staging's DaemonSets: 3180m / 4 = 795 -> 750m; 13070 MiB / 4 = 3267 -> 3264 MiB
    (50m and 64 MiB steps). The old fixed 500m allowance gave 850m: 4 x 850m = 3400m > 3180m really free."""
    settings = settings_for(
        "staging",
        labs_without=WARM_ALONE,
        pool={"instanceTypes": ["g4dn.xlarge"], "warmGpuSlots": 4},
        gpuSharing={"strategy": "time-slicing", "replicas": 4},
    )
    shape = settings.resolved.pool(settings.karpenter.node_pools[0].name).warm_slot_shape
    assert (shape.cpu_millicores, shape.memory_mib) == (750, 3264)


WARM = "gpu-platform:karpenter.nodePools[0]"
BAD_HEADROOM = [
    ({"warmGpuSlots": -1}, {}, f"{WARM}.warmGpuSlots", "must be between 0 and 10000 (got -1)"),
    # gpuLimit 8 physical T4s x 3 replicas = 24 slots at most.
    ({"warmGpuSlots": 25}, {}, f"{WARM}.warmGpuSlots", "gpuLimit x replicas = 8 x 3 = 24"),
    # 3 slots x 2 cores = 6 cores do not fit the 3180m of a g4dn.xlarge.
    ({"warmSlotShape": {"cpuMillicores": 2000, "memoryMib": 1024}, "warmGpuSlots": 1}, {}, f"{WARM}.warmSlotShape", "do not fit one g4dn.xlarge"),
    ({"warmSlotShape": {"cpuMillicores": 500, "memoryMib": 8192}, "warmGpuSlots": 1}, {}, f"{WARM}.warmSlotShape", "(3180m / 13070 MiB allocatable"),
    ({"warmSlotShape": {"cpuMillicores": 500}, "warmGpuSlots": 1}, {}, f"{WARM}.warmSlotShape.memoryMib", "required"),
    # 24 slots need 8 g4dn.xlarge (32 vCPUs) or 2 g4dn.12xlarge (96 vCPUs): both above cpuLimit 16.
    ({"warmGpuSlots": 24, "cpuLimit": 16}, {}, f"{WARM}.warmGpuSlots", "exceed cpuLimit 16"),
    # 64 pods per T4 leave 3180m / 64 -> under 50m each: below a usable pod, so the default shape is refused.
    ({"instanceTypes": ["g4dn.xlarge"], "warmGpuSlots": 1}, {"gpuSharing": {"strategy": "time-slicing", "replicas": 64}}, f"{WARM}.warmSlotShape", "below a usable pod"),
]  # fmt: skip


def test_an_explicit_small_shape_is_the_users_choice() -> None:
    tiny = {"cpuMillicores": 50, "memoryMib": 128}
    settings = settings_for(
        "staging",
        labs_without=WARM_ALONE,
        pool={"instanceTypes": ["g4dn.xlarge"], "warmGpuSlots": 1, "warmSlotShape": tiny},
        gpuSharing={"strategy": "time-slicing", "replicas": 48},
    )
    shape = settings.resolved.pool(settings.karpenter.node_pools[0].name).warm_slot_shape
    assert (shape.cpu_millicores, shape.memory_mib) == (50, 128)


@pytest.mark.parametrize(("pool", "keys", "path", "fragment"), BAD_HEADROOM)
def test_bad_headroom_names_its_key(pool: dict[str, Any], keys: dict[str, Any], path: str, fragment: str) -> None:
    found = problems(config_for("staging", labs_without=WARM_ALONE, pool=pool, **keys))
    assert [p for p, message in found if p == path and fragment in message], found


IGNORED_WITHOUT_KARPENTER = "ignored while karpenter.enabled is false; remove it or set karpenter.enabled: true"


def test_warm_slots_of_a_disabled_karpenter_are_rejected_as_ignored() -> None:
    config = config_for(
        "staging",
        merge={"karpenter": {"enabled": False}},
        pool={"warmGpuSlots": 25},
        demo={"enabled": False},
        labs_without=("sessions", "hub"),
    )
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    assert ("gpu-platform:karpenter.nodePools", IGNORED_WITHOUT_KARPENTER) in caught.value.problems
    # Only the switch: no pools, no headroom.
    off = load_settings({**config, "gpu-platform:karpenter": json.dumps({"enabled": False})})
    assert warm_headroom_manifests.pools_with_headroom(off.resolved.karpenter_pools) == ()


# --- objects -------------------------------------------------------------------------------------------------


def headroom_objects(settings: StackSettings) -> list[dict[str, Any]]:
    objects = []
    for pool in warm_headroom_manifests.pools_with_headroom(settings.resolved.karpenter_pools):
        objects += [
            warm_headroom_manifests.pod_template(pool, settings.resolved.pool(pool.name).warm_slot_shape),
            warm_headroom_manifests.capacity_buffer(pool),
        ]
    return objects


@pytest.mark.parametrize(
    "settings", [settings_for("staging", labs_without=WARM_ALONE), two_pool_settings()], ids=["staging", "two-pools"]
)
def test_every_buffer_validates_against_the_crd_and_every_template_is_strict_valid(settings: StackSettings) -> None:
    objects = headroom_objects(settings)
    buffers = [o for o in objects if o["kind"] == "CapacityBuffer"]
    templates = [o for o in objects if o["kind"] == "PodTemplate"]
    assert (
        len(buffers)
        == len(templates)
        == len(warm_headroom_manifests.pools_with_headroom(settings.resolved.karpenter_pools))
        > 0
    )
    assert [validate_custom_resource(b) for b in buffers] == [[] for _ in buffers]
    assert [validate_core_object(t, settings.kubernetes_version) for t in templates] == [[] for _ in templates]


def test_buffer_references_its_template_with_the_warm_slots() -> None:
    settings = settings_for("staging", labs_without=WARM_ALONE)
    (pool,) = settings.karpenter.node_pools
    template = warm_headroom_manifests.pod_template(pool, settings.resolved.pool(pool.name).warm_slot_shape)
    buffer = warm_headroom_manifests.capacity_buffer(pool)
    assert buffer["metadata"]["namespace"] == template["metadata"]["namespace"]  # podTemplateRef is namespace-local
    assert buffer["spec"]["podTemplateRef"] == {"name": template["metadata"]["name"]}
    assert buffer["spec"]["replicas"] == 3
    (container,) = template["template"]["spec"]["containers"]
    assert container["resources"]["requests"] == {"cpu": "1000m", "memory": "4096Mi", GPU_RESOURCE: "1"}


def test_the_validators_catch_broken_headroom_objects() -> None:
    settings = settings_for("staging", labs_without=WARM_ALONE)
    (pool,) = settings.karpenter.node_pools
    both_refs = copy.deepcopy(warm_headroom_manifests.capacity_buffer(pool))
    both_refs["spec"]["scalableRef"] = {"kind": "Deployment", "name": "lab"}
    assert any("not both" in e for e in validate_custom_resource(both_refs))
    no_count = copy.deepcopy(warm_headroom_manifests.capacity_buffer(pool))
    del no_count["spec"]["replicas"]
    assert any("replicas or limits must also be set" in e for e in validate_custom_resource(no_count))
    template = copy.deepcopy(
        warm_headroom_manifests.pod_template(pool, settings.resolved.pool(pool.name).warm_slot_shape)
    )
    template["template"]["spec"]["warmSlots"] = 3
    assert validate_core_object(template, settings.kubernetes_version) != []


# --- where a warm slot can land ---------------------------------------------------------------------------------


def node_pool_nodes(node_pool: dict[str, Any]) -> list[tuple[dict[str, str], list[dict[str, str]]]]:
    """(labels, taints) of a node of each instance type the NodePool may launch: template labels, one value of
    every `In` requirement, and the karpenter.sh/nodepool label Karpenter puts on its nodes."""
    spec = node_pool["spec"]["template"]["spec"]
    requirements = {r["key"]: r["values"] for r in spec["requirements"] if r["operator"] == "In"}
    nodes = []
    for instance_type in requirements.get(karpenter_manifests.INSTANCE_TYPE_LABEL, ["any"]):
        labels = {key: values[0] for key, values in requirements.items()}
        labels[karpenter_manifests.INSTANCE_TYPE_LABEL] = instance_type
        labels.update(node_pool["spec"]["template"]["metadata"]["labels"])
        labels[karpenter_manifests.NODEPOOL_LABEL] = node_pool["metadata"]["name"]
        nodes.append((labels, spec["taints"]))
    return nodes


def fits(pod_spec: dict[str, Any], labels: dict[str, str], taints: list[dict[str, str]]) -> bool:
    tolerated = all(any(tolerates(t, taint) for t in pod_spec.get("tolerations", [])) for taint in taints)
    return tolerated and pod_can_land_on(pod_spec, labels)


def test_a_warm_slot_lands_on_its_pool_and_only_there() -> None:
    settings = two_pool_settings()
    pools = {pool.name: gpu_node_pool(settings.resolved.pool(pool.name)) for pool in settings.karpenter.node_pools}
    managed_gpu_node = (gpu_node_labels(settings.gpu_sharing.profile), [GPU_TAINT])
    system_node: tuple[dict[str, str], list[dict[str, str]]] = ({SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE}, [])
    for pool in warm_headroom_manifests.pools_with_headroom(settings.resolved.karpenter_pools):
        pod_spec = warm_headroom_manifests.pod_template(pool, settings.resolved.pool(pool.name).warm_slot_shape)[
            "template"
        ]["spec"]
        own = node_pool_nodes(pools[pool.name])
        assert own and all(fits(pod_spec, labels, taints) for labels, taints in own)
        others = [node for name, other in pools.items() if name != pool.name for node in node_pool_nodes(other)]
        assert others and not any(fits(pod_spec, labels, taints) for labels, taints in others)
        assert not fits(pod_spec, *managed_gpu_node)
        assert not fits(pod_spec, *system_node)
        # Without its toleration the slot would fit nowhere on its own pool: the taint is what it tolerates.
        untolerating = {**pod_spec, "tolerations": []}
        assert not any(fits(untolerating, labels, taints) for labels, taints in own)


DEFAULT_SHAPES = [
    # (instance type, sharing, observability, hand-computed allocatable (m, MiB), slots, default shape (m, MiB))
    # g4dn.xlarge, staging's DaemonSets (740m / 520 MiB with the EBS CSI node pod): 3180m / 13070 MiB;
    # 4 slots -> 795 -> 750m, 3267 -> 3264.
    ("g4dn.xlarge", {"strategy": "time-slicing", "replicas": 4}, {}, (3180, 13070), 4, (750, 3264)),
    # 6 slots: 530 -> 500m; 2178 -> 2176 MiB.
    ("g4dn.xlarge", {"strategy": "time-slicing", "replicas": 6}, {}, (3180, 13070), 6, (500, 2176)),
    # g6.xlarge (4 vCPUs, 16 GiB, one L4): the same figures as g4dn.xlarge.
    ("g6.xlarge", {"strategy": "time-slicing", "replicas": 4}, {}, (3180, 13070), 4, (750, 3264)),
    # MPS adds its control daemon (790m / 584 MiB): 3130m / 13006 MiB; 4 slots -> 782 -> 750m, 3251 -> 3200.
    ("g4dn.xlarge", {"strategy": "mps", "replicas": 4}, {}, (3130, 13006), 4, (750, 3200)),
    # No observability (230m / 234 MiB): 3690m / 13356 MiB; 4 slots -> 922 -> 900m, 3339 -> 3328.
    ("g4dn.xlarge", {"strategy": "time-slicing", "replicas": 4}, NO_OBSERVABILITY, (3690, 13356), 4, (900, 3328)),
    # g4dn.2xlarge: 8000 - 90 - 740 = 7170m; 32768 - 2458 - 1465 - 100 - 520 = 28225 MiB; 3 slots: the typical pod.
    ("g4dn.2xlarge", {"strategy": "time-slicing", "replicas": 3}, {}, (7170, 28225), 3, (1000, 4096)),
    # g4dn.12xlarge, 4 T4 x 16: 48000 - 190 - 740 = 47070m; 196608 - 14746 - 1465 - 100 - 520 = 179777 MiB;
    # 64 slots -> 735 -> 700m, 2809 -> 2752 MiB.
    ("g4dn.12xlarge", {"strategy": "time-slicing", "replicas": 16}, {}, (47070, 179777), 64, (700, 2752)),
]  # fmt: skip


@pytest.mark.parametrize(("instance_type", "sharing", "observability", "room", "slots", "shape"), DEFAULT_SHAPES)
def test_every_node_of_the_pool_holds_all_its_slots(
    instance_type: str,
    sharing: dict[str, Any],
    observability: dict[str, bool],
    room: tuple[int, int],
    slots: int,
    shape: tuple[int, int],
) -> None:
    """Requests vs allocatable after system reservations, all hand-computed: GPUs x replicas slots per node."""
    observed = observability or json.loads(STAGING["gpu-platform:observability"])  # {} = staging's
    settings = settings_for(
        "staging",
        labs_without=WARM_ALONE,
        pool={"instanceTypes": [instance_type], "warmGpuSlots": 1},
        gpuSharing=sharing,
        observability=observed,
    )
    (pool,) = warm_headroom_manifests.pools_with_headroom(settings.resolved.karpenter_pools)
    allocatable = settings.resolved.pool(pool.name).node(instance_type).allocatable
    assert (allocatable.cpu_millicores, allocatable.memory_mib) == room
    assert settings.resolved.pool(pool.name).node(instance_type).slots == slots
    (container,) = warm_headroom_manifests.pod_template(pool, settings.resolved.pool(pool.name).warm_slot_shape)[
        "template"
    ]["spec"]["containers"]
    requests = container["resources"]["requests"]
    cpu, memory = int(requests["cpu"].removesuffix("m")), int(requests["memory"].removesuffix("Mi"))
    assert (cpu, memory) == shape
    assert slots * cpu <= room[0] and slots * memory <= room[1]


# --- the nodes the headroom holds --------------------------------------------------------------------------------

NODE_COUNTS = [
    # (warm slots, sharing replicas, instance type, nodes held = ceil(slots / (GPUs x replicas)))
    (3, 3, "g4dn.xlarge", 1),
    (4, 3, "g4dn.xlarge", 2),
    (6, 3, "g4dn.xlarge", 2),
    (6, 2, "g4dn.xlarge", 3),
    (12, 3, "g4dn.12xlarge", 1),
    (13, 3, "g4dn.12xlarge", 2),
    (13, 2, "g4dn.12xlarge", 2),
    (17, 2, "g4dn.12xlarge", 3),
]


@pytest.mark.parametrize(("slots", "replicas", "instance_type", "nodes"), NODE_COUNTS)
def test_nodes_held_follow_the_formula(slots: int, replicas: int, instance_type: str, nodes: int) -> None:
    settings = settings_for(
        "staging",
        labs_without=WARM_ALONE,
        pool={"instanceTypes": [instance_type], "warmGpuSlots": slots, "gpuLimit": 16, "cpuLimit": 256},
        gpuSharing={"strategy": "time-slicing", "replicas": replicas},
    )
    (row,) = settings.resolved.warm_headroom_rows
    assert (row.instance_type, row.warm_slots, row.nodes_held) == (instance_type, slots, nodes)
    (pool,) = settings.resolved.karpenter_pools
    assert pool.node(instance_type).nodes_for(slots) == nodes


def test_pools_without_warm_slots_get_no_buffer_and_leave_the_gate_off() -> None:
    settings = settings_for("staging", labs_without=WARM_ALONE, pool={"warmGpuSlots": 0})
    assert headroom_objects(settings) == []
    assert settings.resolved.warm_headroom_rows == ()
    values = karpenter_values.helm_values(
        controller_inputs(settings), cluster_endpoint="https://x", interruption_queue="q"
    )
    assert values["settings"]["featureGates"]["capacityBuffer"] is False
    assert "env" not in json.dumps(values["settings"])
    on = karpenter_values.helm_values(
        controller_inputs(settings_for("staging", labs_without=WARM_ALONE)),
        cluster_endpoint="https://x",
        interruption_queue="q",
    )
    assert on["settings"]["featureGates"]["capacityBuffer"] is True
    assert "CAPACITY" not in json.dumps(on["controller"]).upper()  # gates only under settings.featureGates


# --- the plan ----------------------------------------------------------------------------------------------------


def test_staging_plan_orders_the_buffer_after_crds_controller_pool_and_template(staging_plan: Plan) -> None:
    (buffer,) = staging_plan.of_type(BUFFER_TYPE)
    (template,) = staging_plan.of_type(POD_TEMPLATE_TYPE)
    charts = {r["name"]: r["urn"] for r in staging_plan.of_type("kubernetes:helm.sh/v4:Chart")}
    (node_pool,) = [
        r
        for r in staging_plan.of_type("kubernetes:karpenter.sh/v1:NodePool")
        if r["name"].endswith("g4-nodepool-nodepool")
    ]
    assert {charts["karpenter-crd"], charts["karpenter-controller"], node_pool["urn"], template["urn"]} <= set(
        buffer["dependencies"]
    )
    assert buffer["parent"] == node_pool["parent"]
    (written,) = staging_plan.objects("CapacityBuffer")
    assert validate_custom_resource(written) == []
    (controller,) = [h for h in staging_plan.helm if h["chart"].endswith("/karpenter")]
    assert controller["values"]["settings"]["featureGates"]["capacityBuffer"] is True


def test_prod_keeps_no_warm_slots(prod_plan: Plan) -> None:
    # Its buffers exist for the lab timetable only: no slot is warm between sessions.
    assert [b["inputs"]["spec"]["replicas"] for b in prod_plan.of_type(BUFFER_TYPE)] == [0, 0]
    assert len(prod_plan.of_type(POD_TEMPLATE_TYPE)) == 2
    (controller,) = [h for h in prod_plan.helm if h["chart"].endswith("/karpenter")]
    assert controller["values"]["settings"]["featureGates"]["capacityBuffer"] is True


# --- nodeadm FastImagePull -----------------------------------------------------------------------------------------


def test_fast_image_pull_minimum_is_nodeadms() -> None:
    """nodeadm ignores the gate below 4 vCPUs or 7 GiB (UseSOCISnapshotter at v20260724)."""
    assert node_allocatable.meets_fast_image_pull_minimum(4, 7 * 1024)
    assert not node_allocatable.meets_fast_image_pull_minimum(2, 8 * 1024)
    assert not node_allocatable.meets_fast_image_pull_minimum(4, 6 * 1024)
    # Every catalog type but g6f.large (2 vCPUs): the stack rule refuses fastImagePull with it.
    below = [
        t for t in gpu_catalog.GPU_INSTANCE_TYPES if not node_allocatable.instance_meets_fast_image_pull_minimum(t)
    ]
    assert below == ["g6f.large"]


def test_fast_image_pull_sets_the_nodeadm_gate_only_when_asked() -> None:
    on = settings_for("staging", labs_without=WARM_ALONE).gpu_nodes
    assert on.fast_image_pull and on.root_volume.throughput_mibps >= 600
    labels = gpu_node_labels("exclusive")
    spec = node_config_of(render_gpu_user_data(on, launched_by="karpenter", node_labels=labels))["spec"]
    assert spec["featureGates"] == {"FastImagePull": True}
    off = on.model_copy(update={"fast_image_pull": False})
    assert (
        "featureGates"
        not in node_config_of(render_gpu_user_data(off, launched_by="karpenter", node_labels=labels))["spec"]
    )


def test_fast_image_pull_needs_the_root_volume_throughput() -> None:
    gpu_nodes = json.loads(STAGING["gpu-platform:gpuNodes"])
    gpu_nodes["rootVolume"]["throughputMibps"] = 125
    found = problems({**STAGING, "gpu-platform:gpuNodes": json.dumps(gpu_nodes)})
    assert [m for p, m in found if p == "gpu-platform:gpuNodes.rootVolume.throughputMibps" and "600" in m], found
