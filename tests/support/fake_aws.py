"""A fake `aws` executable for the preflight's tests: answers each command from a JSON table, logs every call.

The table (`FAKE_AWS_ANSWERS`, set by `install`) maps argument prefixes to `{"stdout": ..., "stderr": ...,
"rc": ...}`; the longest matching prefix wins, and a command without one exits 255 as the real CLI does on
an unknown command.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = f"""#!{sys.executable}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_AWS_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
answers = json.loads(os.environ["FAKE_AWS_ANSWERS"])
best = max((key for key in answers if args[: len(key.split())] == key.split()), key=len, default=None)
if best is None:
    sys.stderr.write("fake aws: no answer for " + " ".join(args))
    sys.exit(255)
answer = answers[best]
sys.stdout.write(json.dumps(answer["stdout"]) if "stdout" in answer else "")
sys.stderr.write(answer.get("stderr", ""))
sys.exit(answer.get("rc", 0))
"""


def install(directory: Path, monkeypatch: pytest.MonkeyPatch, answers: dict[str, Any]) -> Path:
    """Put the fake first on PATH answering `answers`; returns the log of the argument lists it was called with."""
    bin_dir = directory / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "aws"
    script.write_text(SCRIPT, encoding="utf-8")
    script.chmod(0o755)
    log = directory / "aws.log"
    log.touch()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_AWS_LOG", str(log))
    monkeypatch.setenv("FAKE_AWS_ANSWERS", json.dumps(answers))
    return log


def assumed(role_arn: str) -> dict[str, Any]:
    """`sts get-caller-identity`'s answer for a session of `role_arn`."""
    account = role_arn.split(":")[4]
    name = role_arn.rsplit("/", 1)[1]
    return {"stdout": {"Account": account, "Arn": f"arn:aws:sts::{account}:assumed-role/{name}/gh-run-1"}}
