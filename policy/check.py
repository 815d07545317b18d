"""Evaluate the whole policy pack offline on a synth plan, as `pulumi preview --policy-pack policy` would.

    python -m policy.check DIR        (DIR: a `python synth.py --out` folder)

Every rule of `policy.rules.RULES` runs on every resource of DIR/resources.json (type token and
inputs, the props the engine hands a policy); the API server's value rules (`policy.k8s_values`) run on
every object of DIR/manifests/. Prints one line per violation, `rule  urn  message`
(the message names the offending value), and exits 1 on any violation, 0 when clean, 2 when DIR
holds no plan.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

# The rules import the project's single source of facts (components.*), as policy/__main__.py does.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from policy.k8s_values import plan_findings
from policy.provider_rules import RULE_NAME as PROVIDER_RULE_NAME
from policy.provider_rules import plan_violations as provider_plan_violations
from policy.rules import RULES

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_NO_PLAN = 0, 1, 2


def plan_violations(resources: Sequence[dict[str, Any]]) -> Iterator[tuple[str, str, str]]:
    """`(rule name, resource urn, message)` for every violation of every rule, in plan order.

    pulumi-eks's children, which the plan holds only as their components' inputs, follow: each is named
    `<component urn> -> <child type>::<child name>` and held to the AWS provider's rules.
    """
    for resource in resources:
        for rule in RULES:
            if rule.name != PROVIDER_RULE_NAME:  # run below, with the plan's mock IDs known as unknowns
                for message in rule.check(resource["type"], resource["inputs"]):
                    yield rule.name, resource["urn"], message
    for urn, message in provider_plan_violations(resources):
        yield PROVIDER_RULE_NAME, urn, message


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m policy.check DIR  (DIR: a `python synth.py --out` folder)", file=sys.stderr)
        return EXIT_NO_PLAN
    plan_file = Path(args[0]) / "resources.json"
    if not plan_file.is_file():
        print(
            f"policy.check: no plan at {plan_file}; run `python synth.py --stack STACK --out DIR` first",
            file=sys.stderr,
        )
        return EXIT_NO_PLAN
    resources = json.loads(plan_file.read_text(encoding="utf-8"))
    found = list(plan_violations(resources))
    found += plan_findings(plan_file.parent)  # the API server's name, label and annotation rules
    for rule, urn, message in found:
        print(f"{rule}  {urn}  {message}")
    print(f"policy.check: {len(found)} violation(s) in {len(resources)} resources of {plan_file}", file=sys.stderr)
    return EXIT_VIOLATIONS if found else EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
