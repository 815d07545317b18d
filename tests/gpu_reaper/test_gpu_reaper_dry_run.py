"""The GPU idle reaper's dry run (`python -m gpu_reaper --dry-run`) on the recorded scrapes in tests/fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubespawner.slugs import safe_slug

from gpu_reaper import users
from gpu_reaper.__main__ import main
from tests.conftest import PROJECT_DIR

FIXTURES = PROJECT_DIR / "tests" / "fixtures" / "gpu_reaper"
ARGS = ["--dry-run", "--scrapes", str(FIXTURES / "scrapes"), "--users", str(FIXTURES / "users.json")]
FAST = ["--idle-minutes", "10", "--grace-minutes", "5", "--never-used-minutes", "10"]


def run(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, object]]:
    assert main([*ARGS, *extra]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def timeline(lines: list[dict[str, object]], user: str) -> list[tuple[object, object]]:
    return [(line["state"], line["action"]) for line in lines if line["user"] == user]


def test_every_line_has_the_operators_fields(capsys: pytest.CaptureFixture[str]) -> None:
    lines = run(capsys, *FAST)
    assert lines and all({"namespace", "pod", "user", "state", "action"} <= set(line) for line in lines)
    assert {line["action"] for line in lines} == {"none", "warn", "stop"}


def test_idle_learners_are_warned_after_two_windows_and_stopped_after_the_grace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = run(capsys, *FAST, "--kernels", str(FIXTURES / "kernels.json"))
    held = [("held-idle", "none"), ("held-idle", "warn"), ("held-idle", "stop")]
    assert timeline(lines, "bob") == held
    assert timeline(lines, "ben") == held
    assert timeline(lines, "dave") == [("never-used", "none")] * 2 + [("never-used", "warn"), ("never-used", "stop")]


def test_busy_burst_unknown_exempt_and_kernel_busy_learners_are_left_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lines = run(capsys, *FAST, "--kernels", str(FIXTURES / "kernels.json"))
    expected = {"alice": "busy", "carol": "busy", "erin": "unknown", "frank": "unknown", "kim": "busy"}
    for user, state in expected.items():
        assert set(timeline(lines, user)) == {(state, "none")}, user
    # The instructor-exempt learner and the hub admin hold idle memory and keep it.
    assert set(timeline(lines, "ivan")) == {("held-idle", "none")}
    assert set(timeline(lines, "tina")) == {("held-idle", "none")}


def test_without_the_kernels_signal_an_idle_gpu_with_a_busy_kernel_would_be_reclaimed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert ("held-idle", "stop") in timeline(run(capsys, *FAST), "kim")


def test_a_namespace_filter_keeps_other_labs_pods_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, *FAST, "--namespace", "lab-b") == []


@pytest.mark.parametrize("name", ["alice", "Alice.Smith@example.org", "x" * 70])
def test_pod_names_are_kubespawners(name: str) -> None:
    assert users.pod_name(name) == f"jupyter-{safe_slug(name, max_length=48)}"


def test_a_slot_without_per_process_samples_is_unknown_and_never_reclaimed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """bob idles on a profile whose slots are MPS clients or g6f guests: nothing there shows one slot's use."""
    answer = json.loads((FIXTURES / "users.json").read_text())
    for user in answer:
        if user["name"] == "bob":
            user["servers"][""]["user_options"] = {"profile": "gpu-l4-slice"}
    (tmp_path / "users.json").write_text(json.dumps(answer))
    args = ["--dry-run", "--scrapes", str(FIXTURES / "scrapes"), "--users", str(tmp_path / "users.json")]
    assert main([*args, *FAST, "--unjudged-profile", "gpu-l4-slice"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert set(timeline(lines, "bob")) == {("unknown", "none")}
    assert timeline(lines, "ben")[-1] == ("held-idle", "stop")  # the same idleness on a time-sliced slot
