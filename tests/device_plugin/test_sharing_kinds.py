"""The three sharing kinds end to end: a stack with one pool of each (time-slicing, MPS, g6f) synthesizes, its
NodeOverlays and NodePools pass the pinned Karpenter CRDs, its device-plugin configs pass the plugin-config model,
and the one slot model (`ResolvedPool.slot`) gives the profiles, the summary and the reaper each kind."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components.facts import gpu_catalog
from components.facts.constants import GPU_RESOURCE, INSTANCE_FAMILY_LABEL, INSTANCE_GPU_COUNT_LABEL, NODEPOOL_LABEL
from components.renderers.device_plugin.device_plugin_config import parse_config
from components.renderers.hub import hub_profiles
from components.renderers.karpenter import karpenter_values
from components.settings import StackSettings
from components.settings.loading import load_settings
from components.settings.sharing_kinds import Isolation, SlotModel, isolation_of, mps_client_cap_mib
from offline.config_files import read_stack_config
from offline.plan import Plan
from offline.project_copy import copy_program
from tests.conftest import PROJECT_DIR, synth_in_process
from tests.support.crd_validation import validate_custom_resource

STACK = "sharing-kinds"
STACK_FILE = PROJECT_DIR / "tests" / "stacks" / f"Pulumi.{STACK}.yaml"
KINDS = {"g4-nodepool": "time-slicing", "a10g-mps": "mps", "l4-slice": "g6f"}


@pytest.fixture(scope="module")
def kinds_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = copy_program(tmp_path_factory.mktemp("kinds"))
    shutil.copy(STACK_FILE, project / STACK_FILE.name)
    return project


@pytest.fixture(scope="module")
def kinds_synth(kinds_project: Path) -> str:
    """The synth's summary (stdout) of the stack; its plan is written to `out`."""
    code, stdout, stderr = synth_in_process(STACK, kinds_project / "out", kinds_project)
    assert code == 0, stdout + stderr
    return stdout


@pytest.fixture(scope="module")
def kinds_plan(kinds_project: Path, kinds_synth: str) -> Plan:
    return Plan.load(kinds_project / "out")


@pytest.fixture(scope="module")
def kinds_settings(tmp_path_factory: pytest.TempPathFactory) -> StackSettings:
    """The stack's settings, read as `pulumi up` reads them (no synth: the project file and the stack file)."""
    folder = tmp_path_factory.mktemp("kinds-config")
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", folder / "Pulumi.yaml")
    shutil.copy(STACK_FILE, folder / STACK_FILE.name)
    config = read_stack_config(folder, STACK)
    return load_settings(config.values, config.secret_keys)


def _objects(plan: Plan, kind: str) -> dict[str, dict]:
    return {obj["metadata"]["name"]: obj for obj in plan.manifests.values() if obj.get("kind") == kind}


def test_one_pool_of_each_kind(kinds_settings: StackSettings) -> None:
    pools = {pool.name: pool for pool in kinds_settings.resolved.karpenter_pools}
    assert {name: pool.slot_kind for name, pool in pools.items()} == KINDS


def test_each_slot_gets_its_kinds_memory_and_isolation(kinds_settings: StackSettings) -> None:
    slots = {pool.name: pool.slot for pool in kinds_settings.resolved.karpenter_pools}
    # Time-slicing: a T4's 16,384 MiB / 3, a share nothing enforces.
    assert slots["g4-nodepool"] == SlotModel("time-slicing", 16384 // 3, 3, Isolation(False, False, False))
    # MPS: the control daemon's cap, totalMemory / replicas (v0.20.0 daemon.go): 24,576 / 4 on an A10G.
    assert slots["a10g-mps"] == SlotModel("mps", 6144, 4, Isolation(memory=True, faults=False, compute=False))
    # g6f: the smallest slice's own framebuffer (g6f.xlarge: 2,861 MiB), nothing shared.
    assert slots["l4-slice"] == SlotModel("g6f", 2861, 1, Isolation(True, True, True))
    assert [s.per_process_gpu_samples for s in slots.values()] == [True, False, False]


@pytest.mark.slow  # the stack's own synth (kinds_synth)
def test_the_stack_synthesizes_and_its_karpenter_objects_pass_the_crds(kinds_plan: Plan) -> None:
    overlays, pools = _objects(kinds_plan, "NodeOverlay"), _objects(kinds_plan, "NodePool")
    assert set(pools) == {*KINDS, "cpu-user"}  # the hub's CPU notebooks get the CPU user pool
    assert set(overlays) == {"g4-nodepool-1gpu-shared", "a10g-mps-1gpu-shared", "l4-slice-g6f-slice"}
    for obj in [*overlays.values(), *pools.values()]:
        assert validate_custom_resource(obj) == [], obj["metadata"]["name"]


@pytest.mark.slow  # the stack's own synth (kinds_synth)
def test_the_g6f_overlay_gives_one_gpu_a_node_by_family(kinds_plan: Plan) -> None:
    overlay = _objects(kinds_plan, "NodeOverlay")["l4-slice-g6f-slice"]["spec"]
    assert overlay["capacity"] == {GPU_RESOURCE: "1"}
    assert {r["key"]: r["values"] for r in overlay["requirements"]} == {
        NODEPOOL_LABEL: ["l4-slice"],
        INSTANCE_FAMILY_LABEL: ["g6f"],
    }


@pytest.mark.slow  # the stack's own synth (kinds_synth)
def test_the_g6f_pool_has_gpu_and_cpu_backstops_and_no_gpu_count_requirement(kinds_plan: Plan) -> None:
    pool = _objects(kinds_plan, "NodePool")["l4-slice"]["spec"]
    assert pool["limits"] == {"cpu": "48", GPU_RESOURCE: "6"}  # gpuLimit slices, one a node
    keys = [r["key"] for r in pool["template"]["spec"]["requirements"]]
    assert INSTANCE_GPU_COUNT_LABEL not in keys  # g6f reports 0: such a requirement would exclude it
    assert all(gpu_catalog.reported_gpu_count(t) == 0 for t in ("g6f.large", "g6f.xlarge", "g6f.2xlarge"))


@pytest.mark.slow  # the stack's own synth (kinds_synth)
def test_the_device_plugin_configs_pass_the_plugin_config_model(kinds_plan: Plan) -> None:
    configs = {
        obj["metadata"]["name"]: parse_config(obj["data"]["config.yaml"])
        for obj in _objects(kinds_plan, "ConfigMap").values()
        if obj["metadata"]["name"].startswith("nvidia-device-plugin-")
    }
    by_strategy = {config.strategy: config for config in configs.values()}
    assert set(by_strategy) == {"time-slicing", "mps", "none"}
    mps = by_strategy["mps"]
    assert mps.sharing is not None and mps.sharing.mps is not None
    assert [r.replicas for r in mps.sharing.mps.resources] == [4]
    assert mps.flags.mps_root


@pytest.mark.slow  # the stack's own synth (kinds_synth)
def test_the_mps_pool_runs_its_control_daemon(kinds_plan: Plan) -> None:
    assert "nvidia-mps-control-daemon-mps-4" in _objects(kinds_plan, "DaemonSet")


@pytest.mark.slow  # the stack's own synth (kinds_synth)
def test_the_summary_prints_each_pools_slot(kinds_synth: str) -> None:
    summary = kinds_synth
    assert "a10g-mps              mps           6144 MiB capped per client" in summary
    assert "l4-slice              g6f           2861 MiB its own" in summary
    assert "isolated: memory; shared: faults, compute" in summary
    # The demo (UID 10001) and the notebooks (UID 1000) would take turns on an MPS GPU: one MPS server per UID.
    assert "WARNING: the demo runs as UID 10001, notebooks as UID 1000: on MPS pools (a10g-mps)" in summary


@pytest.mark.parametrize(
    ("slot", "name"),
    [
        (SlotModel("time-slicing", 5461, 3, isolation_of("time-slicing")),
         "Shared T4, time-sliced — about 5.3 GB GPU memory, not fenced: shared with 2 others"),
        (SlotModel("mps", 5461, 3, isolation_of("mps")),
         "Shared T4, MPS — 5.3 GB GPU memory capped, compute shared with 2 others"),
        (SlotModel("g6f", 2861, 1, isolation_of("g6f")), "T4 slice — 2.8 GB GPU memory, yours alone"),
        (SlotModel("exclusive", 16384, 1, isolation_of("exclusive")), "Whole T4 — 16 GB GPU memory, yours alone"),
    ],
)  # fmt: skip
def test_profiles_promise_what_the_kind_delivers(slot: SlotModel, name: str) -> None:
    assert hub_profiles.display_name("T4", slot) == name


def test_the_profiles_of_the_stack(kinds_settings: StackSettings) -> None:
    lab = next(lab for lab in kinds_settings.labs if lab.hub is not None)
    assert lab.hub is not None
    names = [p.display_name for p in hub_profiles.profiles(kinds_settings.resolved.hub_pools(lab.hub)) if p.gpu]
    assert names == [
        "Shared T4, time-sliced — about 5.3 GB GPU memory, not fenced: shared with 2 others",
        "Shared A10G, MPS — 6 GB GPU memory capped, compute shared with 3 others",
        "L4 slice — 2.8 GB GPU memory, yours alone",
    ]


def test_a_g6f_pool_alone_turns_the_node_overlay_gate_on(kinds_settings: StackSettings) -> None:
    pools = [pool for pool in kinds_settings.resolved.karpenter_pools if pool.slot_kind == "g6f"]
    assert pools and all(pool.replicas == 1 for pool in pools)
    assert karpenter_values.shares_gpus(kinds_settings.karpenter, pools)


def test_mps_cap_follows_the_plugins_arithmetic() -> None:
    # `totalMemory/replicas/1024/1024` on bytes equals whole MiB / replicas, rounded down.
    for memory_mib, replicas in ((16384, 3), (23034, 7), (46068, 10)):
        assert mps_client_cap_mib(memory_mib, replicas) == memory_mib * 2**20 // replicas // 2**20
    assert mps_client_cap_mib(46068, 10) == 4606  # the `0 4606M` of NVIDIA/k8s-device-plugin#764
