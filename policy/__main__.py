"""Entry point Pulumi runs for `--policy-pack policy` (serves the pack to the engine until stopped)."""

import sys
from pathlib import Path

# The rules import the project's single source of facts (components.facts.constants, components.facts.gpu_catalog).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import PolicyPack

from policy.pack import ENFORCEMENT, PACK_NAME, policies

PolicyPack(name=PACK_NAME, enforcement_level=ENFORCEMENT, policies=policies())
