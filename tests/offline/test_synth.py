"""The offline synth contract (docs/offline-synth.md): files, URNs, edges, determinism, exit codes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.settings import StackSettings
from offline import config_files
from offline.config_files import SECRET_PLACEHOLDER, read_stack_config
from offline.plan import Plan
from tests.conftest import PROJECT_DIR, STACKS, SynthRun, run_synth, synthesize

RESOURCE_KEYS = {"urn", "type", "name", "parent", "dependencies", "protect", "custom", "inputs"}


def _urn_is_engine_form(resource: dict, plan: Plan, stack: str) -> bool:
    chain = [resource["type"]]
    parent = resource["parent"]
    while parent is not None:
        owner = plan.by_urn(parent)
        chain.insert(0, owner["type"])
        parent = owner["parent"]
    return resource["urn"] == f"urn:pulumi:{stack}::gpu-platform::{'$'.join(chain)}::{resource['name']}"


@pytest.mark.parametrize("stack", STACKS)
def test_resources_follow_the_contract(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    urns = [r["urn"] for r in plan.resources]
    assert len(urns) == len(set(urns)), "duplicate URNs (the real engine would refuse them)"
    position = {urn: index for index, urn in enumerate(urns)}
    for resource in plan.resources:
        # `aliases` (former URNs) only where the program gives them (components/access.py).
        assert RESOURCE_KEYS <= set(resource) <= RESOURCE_KEYS | {"aliases"}
        assert resource["type"] != "pulumi:pulumi:Stack"
        assert _urn_is_engine_form(resource, plan, stack), resource["urn"]
        for dependency in resource["dependencies"]:
            assert dependency in position, f"{resource['urn']} depends on unknown {dependency}"
            assert position[dependency] < position[resource["urn"]], "dependencies are registered first"
        if resource["parent"] is not None:
            assert position[resource["parent"]] < position[resource["urn"]]


@pytest.mark.parametrize("stack", STACKS)
def test_inputs_are_json_natural(plans: dict[str, Plan], stack: str) -> None:
    def walk(value: object, path: str) -> None:
        assert not (isinstance(value, float) and value.is_integer()), f"whole float at {path}"
        assert value != "04da6b54-80e4-46f7-96ec-b56ff0331ba9", f"unknown value at {path}"
        if isinstance(value, dict):
            assert list(value) == sorted(value), f"unsorted keys at {path}"
            for key, item in value.items():
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, f"{path}[{index}]")

    for resource in plans[stack].resources:
        walk(resource["inputs"], resource["urn"])


def test_remote_component_children_are_represented_by_the_component(staging_plan: Plan) -> None:
    cluster = staging_plan.one("eks:index:Cluster", "cluster-eks")
    addon = staging_plan.one("aws:eks/addon:Addon", "cluster-pod-identity-agent")
    assert addon["dependencies"] == [cluster["urn"]]
    assert addon["inputs"]["clusterName"] == "nextgen-learninglab"


def test_two_runs_are_byte_identical(staging_synth: SynthRun, tmp_path: Path) -> None:
    """The real command in a fresh interpreter (another hash seed) writes the bytes of the session's in-process synth,
    and nothing to stderr: no `Exception ignored in BaseEventLoop.__del__` at shutdown (the loop is closed first)."""
    first, second = staging_synth.out, tmp_path / "two"
    result = run_synth("staging", second)
    assert (result.returncode, result.stderr) == (0, ""), result.stdout + result.stderr
    files = sorted(p.relative_to(first) for p in first.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(second) for p in second.rglob("*") if p.is_file())
    # The plan, and beside it the weekly cost forecast and its picture (docs/cost.md): deterministic too.
    assert [f.as_posix() for f in files if f.parts[0] != "manifests"] == [
        "cost-forecast.json", "cost-week.svg", "helm.json", "resources.json",
    ]  # fmt: skip
    for relative in files:
        assert (first / relative).read_bytes() == (second / relative).read_bytes(), relative


def test_one_synth_reads_the_stack_file_once_and_validates_it_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The synth parses `Pulumi.yaml` and `Pulumi.<stack>.yaml` once and validates them into `StackSettings` once;
    the program run (`__main__.py`'s `read_settings`), the cost forecast and the summary take those settings."""
    parsed_files: list[str] = []
    validations: list[object] = []
    parse, validate = config_files._parse, StackSettings.model_validate

    def counted_parse(path: Path) -> Any:
        parsed_files.append(path.name)
        return parse(path)

    def counted_validate(cls: type[StackSettings], values: object, **options: Any) -> StackSettings:
        validations.append(values)
        return validate(values, **options)

    monkeypatch.setattr(config_files, "_parse", counted_parse)
    monkeypatch.setattr(StackSettings, "model_validate", classmethod(counted_validate))
    synthesize("staging", tmp_path / "out")
    assert parsed_files == ["Pulumi.yaml", "Pulumi.staging.yaml"]
    assert len(validations) == 1


@pytest.mark.parametrize("stack", STACKS)
def test_manifests_hold_only_kubernetes_objects(plans: dict[str, Plan], stack: str) -> None:
    for filename, obj in plans[stack].manifests.items():
        assert {"apiVersion", "kind", "metadata"} <= set(obj), filename
        assert obj["metadata"]["name"], filename
        assert "chart" not in obj


def test_secure_values_become_placeholders(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: demo\nconfig:\n  size:\n    type: integer\n    default: 3\n")
    (tmp_path / "Pulumi.dev.yaml").write_text(
        "config:\n  aws:region: us-west-1\n  demo:token:\n    secure: AAABAC==\n  demo:nested: {a: {secure: x}, b: 1}\n"
    )
    config = read_stack_config(tmp_path, "dev")
    assert config.values["demo:token"] == SECRET_PLACEHOLDER
    assert config.values["demo:nested"] == '{"a": "[secret]", "b": 1}'
    assert config.values["demo:size"] == "3", "Pulumi.yaml defaults are applied as the CLI does"
    assert config.secret_keys == ("demo:nested", "demo:token")


# --- exit codes -----------------------------------------------------------------------------


BROKEN_STAGING = [
    ("gpu-platform:gpuSharing", {"strategy": "time-slicing", "replicas": 1}, "gpu-platform:gpuSharing.replicas"),
    ("gpu-platform:clusterName", "Bad_Name!", "gpu-platform:clusterName"),
    ("aws:region", "us-nowhere-1", "aws:region"),
    ("gpu-platform:gpuNodeGroup", {"instanceTypes": ["t3.large"]}, "gpu-platform:gpuNodeGroup.instanceTypes[0]"),
    ("gpu-platform:kubernetesVersion", "1.20", "gpu-platform:kubernetesVersion"),
]


@pytest.mark.parametrize(("key", "value", "path"), BROKEN_STAGING, ids=[c[2] for c in BROKEN_STAGING])
def test_broken_stack_file_exits_2_naming_the_key(
    project_copy: Path, tmp_path: Path, key: str, value: object, path: str
) -> None:
    stack_file = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text())
    stack_file["config"][key] = value
    (project_copy / "Pulumi.broken.yaml").write_text(yaml.safe_dump(stack_file))
    out = tmp_path / "out"
    out.mkdir()
    (out / "resources.json").write_text("[] stale from an earlier run")
    result = run_synth("broken", out, project_copy)
    assert result.returncode == 2, result.stderr
    assert path in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (out / "resources.json").exists()


def test_unreadable_stack_file_exits_2(project_copy: Path, tmp_path: Path) -> None:
    (project_copy / "Pulumi.garbled.yaml").write_text("config: [unclosed\n")
    result = run_synth("garbled", tmp_path, project_copy)
    assert result.returncode == 2
    assert "Pulumi.garbled.yaml" in result.stderr and "Traceback" not in result.stderr


def test_program_failure_exits_1(project_copy: Path, tmp_path: Path) -> None:
    broken = project_copy / "broken-program"
    shutil.copytree(project_copy, broken, ignore=shutil.ignore_patterns("broken-program"))
    shutil.copy2(PROJECT_DIR / "Pulumi.staging.yaml", broken / "Pulumi.staging.yaml")
    main = broken / "__main__.py"
    main.write_text(main.read_text() + "\nraise RuntimeError('boom from the program')\n")
    result = run_synth("staging", tmp_path, broken)
    assert result.returncode == 1
    assert "boom from the program" in result.stderr
    assert not (tmp_path / "resources.json").exists()


def test_resources_are_in_program_order(staging_plan: Plan) -> None:
    """Registration order is the order __main__.py constructs things, not the order inputs resolve."""
    components = [r["name"] for r in staging_plan.resources if r["type"].startswith("gpu-platform:")]
    # Staging has no managed GPU node group (warm Karpenter headroom instead; docs/operations.md "Warm GPU headroom").
    assert components == [
        "network",
        "cluster",
        "karpenter",
        "lab-timetable",
        "nvidia-device-plugin",
        "labs",
        "labs-learning-lab-members",  # the lab members' Role and RoleBinding, a child of `labs`
        "access",
        "learning-lab",
        "hubs",
        "observability",
    ]
    names = [r["name"] for r in staging_plan.resources]
    assert names[:2] == ["network", "network-vpc"]
    assert names.index("cluster-secrets") < names.index("cluster-eks") < names.index("cluster-system")
