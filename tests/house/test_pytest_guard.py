"""A test that returns a Pulumi Output (missing @pulumi.runtime.test) must fail, not pass silently."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import PROJECT_DIR

VACUOUS_TEST = """
import pulumi

def test_returns_an_output():
    return pulumi.Output.from_input(1).apply(lambda value: value == 2)
"""


def test_returning_an_output_fails_the_suite(tmp_path: Path) -> None:
    (tmp_path / "test_vacuous.py").write_text(VACUOUS_TEST)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-c",
            str(PROJECT_DIR / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stdout
    assert "PytestReturnNotNoneWarning" in result.stdout
