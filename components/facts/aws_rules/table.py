"""The one table of what the AWS provider validates at preview, for every `aws:*` input the plans set.

`pulumi preview` runs terraform-provider-aws's `ValidateFunc`s (bridged by pulumi-aws) on every known input
value; Pulumi mocks run none of them. The entries live in `network`, `platform` and
`messaging` (split by service), keyed by (resource type, input path); rules that hold for every resource (tags) are one entry
here. Upstream: hashicorp/terraform-provider-aws, the v6 line pulumi-aws 7.x bridges (pulumi-aws's
`upstream` submodule). Adding an input is one line in the service module:
`(TYPE, "path"): rule("<file> <function>", length(1, 64), ...)` or `unconstrained("<file> <function>")`.
"""

from __future__ import annotations

from components.facts.aws_rules.messaging import MESSAGING_RULES
from components.facts.aws_rules.network import NETWORK_RULES
from components.facts.aws_rules.platform import PLATFORM_RULES
from components.facts.aws_rules.validators import InputRule, length, not_pattern, rule

# Map-typed inputs: their keys are data, so a path names them `*` (`tags.*`, `labels.*`).
MAP_INPUTS = frozenset({"tags", "labels", "dimensions", "nodeSecurityGroupTags"})

# terraform-provider-aws `internal/tags` TagsSchema() is a plain map of strings (no ValidateFunc): the
# provider passes tags through and the service APIs enforce the AWS-wide tag rules.
TAGS = rule(
    "AWS tagging rules (docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html, 'Tag naming limits and "
    "requirements'; terraform-provider-aws internal/tags TagsSchema has no ValidateFunc)",
    length(0, 256),
    keys=(length(1, 128), not_pattern(r"^aws:", "no reserved aws: prefix")),
)

TABLE: dict[tuple[str, str], InputRule] = {**NETWORK_RULES, **PLATFORM_RULES, **MESSAGING_RULES}


def is_tag_path(path: str) -> bool:
    return path == "tags.*" or path.endswith(".tags.*")


def rule_for(resource_type: str, path: str) -> InputRule | None:
    """The provider's rule for one input, or None when the table has no entry (a coverage gap)."""
    if is_tag_path(path):
        return TAGS
    return TABLE.get((resource_type, path))
