"""`bench/gpu_mps_check.sh`: the MPS memory-cap check for a GPU machine. Here (no GPU) it must skip cleanly, with
its reason, and it must pass shellcheck; on a GPU machine it runs (docs/sharing-kinds.md "The device check")."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.conftest import PROJECT_DIR

SCRIPT = PROJECT_DIR / "bench" / "gpu_mps_check.sh"


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT)], env={**os.environ, **env}, capture_output=True, text=True, timeout=60, check=False
    )


def test_it_skips_with_its_reason_where_no_gpu_exists() -> None:
    result = _run({"GPU_MPS_CHECK_NVIDIA_SMI": "nvidia-smi-not-on-this-machine"})
    assert (result.returncode, result.stdout) == (
        0,
        "SKIP: no NVIDIA GPU here (nvidia-smi-not-on-this-machine not found)\n",
    )


def test_the_plain_command_skips_or_passes_here() -> None:
    """Without a GPU (CI, this machine) the plain command skips; on a GPU machine as root it must pass."""
    result = _run({})
    last = result.stdout.splitlines()[-1]
    if shutil.which("nvidia-smi") is None:
        assert (result.returncode, last) == (0, "SKIP: no NVIDIA GPU here (nvidia-smi not found)")
    else:
        assert result.returncode == 0 and last.startswith(("SKIP: ", "PASS: ")), result.stdout


def test_it_skips_without_the_mps_binaries(tmp_path: Path) -> None:
    """A GPU without the driver's MPS control binary: skipped by name, before touching the GPU's compute mode."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\necho 'GPU 0: Tesla T4 (UUID: GPU-0)'\n", encoding="utf-8")
    fake.chmod(0o755)
    result = _run({"GPU_MPS_CHECK_NVIDIA_SMI": str(fake), "GPU_MPS_CHECK_MPS_CONTROL": "no-mps-control-here"})
    assert (result.returncode, result.stdout) == (
        0,
        "SKIP: no-mps-control-here not found (the driver's MPS binaries)\n",
    )


def test_it_passes_shellcheck() -> None:
    shellcheck = shutil.which("shellcheck") or str(PROJECT_DIR / ".venv" / "bin" / "shellcheck")
    result = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
