"""Copy the program (not its tests or virtualenv) to a scratch folder, to synth altered stack files there."""

from __future__ import annotations

import shutil
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
# Everything `python synth.py --stack <stack>` needs, besides the stack file itself (the hub ships gpu_reaper/ as files).
PROGRAM_FILES = ("Pulumi.yaml", "__main__.py", "synth.py", "components", "gpu_reaper", "offline", "policy")


def copy_program(destination: Path) -> Path:
    destination.mkdir(parents=True, exist_ok=True)
    for name in PROGRAM_FILES:
        source = PROJECT_DIR / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, destination / name)
    return destination
