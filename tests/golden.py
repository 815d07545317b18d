"""Golden files of the GPU userData: one per stack and launcher, readable MIME text under tests/golden/.

Refresh them after an intended change (then review the diff):

    .venv/bin/python -m tests.golden

tests/test_gpu_bootstrap.py fails on any difference between these files and the renderer's output.
The Karpenter variant uses the stack's default sharing profile (pools without their own gpuSharing).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import get_args

from components.constants import gpu_node_labels
from components.gpu_bootstrap import LaunchedBy, render_gpu_user_data
from components.settings import load_settings
from offline.config_files import read_stack_config, stacks_in

PROJECT_DIR = Path(__file__).resolve().parent.parent
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
GOLDEN_GLOB = "userdata-*.mime"


def golden_path(stack: str, launched_by: LaunchedBy) -> Path:
    return GOLDEN_DIR / f"userdata-{stack}-{launched_by}.mime"


def rendered_user_data() -> dict[Path, str]:
    """What every golden file must contain, rendered from the stack files as `pulumi up` reads them."""
    rendered = {}
    for stack in stacks_in(PROJECT_DIR):
        settings = load_settings(read_stack_config(PROJECT_DIR, stack).values)
        labels = gpu_node_labels(settings.sharing_for(None).profile)
        for launched_by in get_args(LaunchedBy):
            rendered[golden_path(stack, launched_by)] = render_gpu_user_data(
                settings.gpu_nodes, launched_by=launched_by, node_labels=labels
            )
    return rendered


def main() -> int:
    rendered = rendered_user_data()
    GOLDEN_DIR.mkdir(exist_ok=True)
    for stale in sorted(set(GOLDEN_DIR.glob(GOLDEN_GLOB)) - set(rendered)):
        stale.unlink()
        print(f"removed {stale.relative_to(PROJECT_DIR)}")
    for path, text in rendered.items():
        changed = not path.exists() or path.read_text(encoding="utf-8") != text
        path.write_text(text, encoding="utf-8")
        print(f"{'updated' if changed else 'unchanged'} {path.relative_to(PROJECT_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
