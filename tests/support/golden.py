"""Golden files of the GPU userData: per stack, the managed GPU node group's and each Karpenter pool's
(readable MIME text under tests/golden/).

Refresh them after an intended change (then review the diff):

    .venv/bin/python -m tests.support.golden

tests/nodes/test_gpu_bootstrap.py fails on any difference between these files and the renderer's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

from components.facts.constants import gpu_node_labels
from components.renderers.nodes.gpu_bootstrap import render_gpu_user_data
from components.settings import load_settings
from offline.config_files import read_stack_config, stacks_in
from tests.conftest import PROJECT_DIR

GOLDEN_DIR = PROJECT_DIR / "tests" / "golden"
GOLDEN_GLOB = "userdata-*.mime"


def rendered_user_data() -> dict[Path, str]:
    """What every golden file must contain: the userData each launcher really gets, per stack.

    One file for the managed GPU node group and one per Karpenter pool (pools differ in their
    sharing-profile label), rendered from the stack files as `pulumi up` reads them.
    """
    rendered = {}
    for stack in stacks_in(PROJECT_DIR):
        settings = load_settings(read_stack_config(PROJECT_DIR, stack).values)
        if settings.gpu_node_group.enabled:
            rendered[GOLDEN_DIR / f"userdata-{stack}-managed-node-group.mime"] = render_gpu_user_data(
                settings.gpu_node_bootstrap,
                launched_by="managed-node-group",
                node_labels=gpu_node_labels(settings.gpu_sharing.profile),
            )
        if settings.karpenter.enabled:
            for pool in settings.karpenter.node_pools:
                rendered[GOLDEN_DIR / f"userdata-{stack}-karpenter-{pool.name}.mime"] = render_gpu_user_data(
                    settings.gpu_node_bootstrap,
                    launched_by="karpenter",
                    node_labels=gpu_node_labels(settings.resolved.pool(pool.name).sharing.profile),
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
