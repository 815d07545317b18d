"""The value checks terraform-provider-aws runs on inputs at preview, as small predicates.

Each `Check` mirrors one upstream `ValidateFunc` (hashicorp/terraform-provider-aws: `validation.*` of
terraform-plugin-sdk, `internal/verify/validate.go`, the services' `validate.go`), so a table entry reads like
the schema it was transcribed from. Go's `regexp.MatchString` finds a match anywhere, as `re.search` does: the
patterns below are the upstream ones, anchors included, and are searched the same way.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

UPSTREAM = "hashicorp/terraform-provider-aws"


@dataclass(frozen=True)
class Check:
    rule: str  # what the provider requires, in the words of its validator
    ok: Callable[[Any], bool]


@dataclass(frozen=True)
class InputRule:
    """Every validator the provider runs on one input (none: the input is unconstrained upstream)."""

    checks: tuple[Check, ...]
    source: str  # file and function upstream (or the AWS API reference the provider defers to)
    key_checks: tuple[Check, ...] = ()  # for a map input (`tags.*`): the rules on its keys


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def length(low: int, high: int) -> Check:
    """validation.StringLenBetween(low, high): counts bytes, as Go's len() does."""
    return Check(f"length {low}..{high}", lambda v: _is_str(v) and low <= len(v.encode("utf-8")) <= high)


def pattern(regex: str) -> Check:
    """validation.StringMatch / an upstream `regexp.MatchString(pattern, value)`."""
    compiled = re.compile(regex)
    return Check(f"matches {regex}", lambda v: _is_str(v) and compiled.search(v) is not None)


def not_pattern(regex: str, why: str) -> Check:
    """validation.StringDoesNotMatch."""
    compiled = re.compile(regex)
    return Check(why, lambda v: _is_str(v) and compiled.search(v) is None)


def one_of(*values: str) -> Check:
    """validation.StringInSlice(values, false) / enum.Validate[T](): exact, case-sensitive."""
    return Check(f"one of {', '.join(values)}", lambda v: v in values)


def int_between(low: int, high: int) -> Check:
    """validation.IntBetween(low, high)."""
    return Check(f"integer {low}..{high}", lambda v: _is_int(v) and low <= v <= high)


def int_at_least(low: int) -> Check:
    """validation.IntAtLeast(low)."""
    return Check(f"integer >= {low}", lambda v: _is_int(v) and v >= low)


def int_in(*values: int) -> Check:
    """validation.IntInSlice(values)."""
    return Check(f"one of {', '.join(map(str, values))}", lambda v: _is_int(v) and v in values)


def int_in_or_divisible(values: tuple[int, ...], divisor: int) -> Check:
    """validation.Any(validation.IntInSlice(values), validation.IntDivisibleBy(divisor))."""
    return Check(
        f"one of {', '.join(map(str, values))} or a multiple of {divisor}",
        lambda v: _is_int(v) and (v in values or v % divisor == 0),
    )


def number() -> Check:
    """schema.TypeFloat without a ValidateFunc: any number."""
    return Check("a number", lambda v: isinstance(v, (int, float)) and not isinstance(v, bool))


def not_empty() -> Check:
    """validation.NoZeroValues / validation.StringIsNotEmpty."""
    return Check("not empty", lambda v: v not in ("", 0, None))


def _json_ok(value: Any) -> bool:
    if not _is_str(value):
        return False
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def json_text() -> Check:
    """validation.StringIsJSON."""
    return Check("valid JSON", _json_ok)


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate JSON keys")
    return dict(pairs)


def _policy_ok(value: Any) -> bool:
    if not _is_str(value) or not value.startswith("{"):
        return False
    try:
        json.loads(value, object_pairs_hook=_no_duplicate_keys)
    except ValueError:
        return False
    return True


def iam_policy_json() -> Check:
    """verify.ValidIAMPolicyJSON: a JSON object, no leading space, no duplicate keys."""
    return Check("a JSON object policy (no leading space, no duplicate keys)", _policy_ok)


# internal/verify/validate.go: ValidARNCheck's partition, region and account patterns.
_PARTITION = re.compile(r"^aws(-[a-z]+)*$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_ACCOUNT = re.compile(r"^(aws|aws-managed|third-party|\d{12}|cw.{10})$")


def _arn_ok(value: Any) -> bool:
    if not _is_str(value):
        return False
    if value == "":
        return True  # ValidARNCheck lets an empty string through
    parts = value.split(":", 5)  # aws-sdk-go arn.Parse: arn:partition:service:region:account:resource
    if len(parts) != 6 or parts[0] != "arn":
        return False
    _, partition, _service, region, account, resource = parts
    return (
        _PARTITION.search(partition) is not None
        and (region == "" or _REGION.search(region) is not None)
        and (account == "" or _ACCOUNT.search(account) is not None)
        and resource != ""
    )


def arn() -> Check:
    """verify.ValidARN: parseable, valid partition, region, account ID and a resource part."""
    return Check("an ARN (partition, region, 12-digit account or aws, resource)", _arn_ok)


def _network(value: Any, version: int | None) -> bool:
    if not _is_str(value) or "/" not in value:
        return False
    try:
        network = ipaddress.ip_network(value, strict=True)  # strict: the CIDR must be the network address
    except ValueError:
        return False
    return version is None or network.version == version


def ipv4_cidr() -> Check:
    """verify.ValidIPv4CIDRNetworkAddress: an IPv4 CIDR that is its own network address."""
    return Check("an IPv4 CIDR network address", lambda v: _network(v, 4))


def cidr_network(low: int, high: int) -> Check:
    """validation.IsCIDRNetwork(low, high): a network address whose prefix is low..high bits long."""

    def ok(value: Any) -> bool:
        return _network(value, None) and low <= ipaddress.ip_network(value).prefixlen <= high

    return Check(f"a CIDR network address with a /{low}../{high} prefix", ok)


def cidr() -> Check:
    """verify.ValidCIDRNetworkAddress: an IPv4 or IPv6 CIDR that is its own network address."""
    return Check("a CIDR network address", lambda v: _network(v, None))


def _cited(source: str) -> str:
    return f"{UPSTREAM} {source}" if source.startswith("internal/") else source


def rule(source: str, *checks: Check, keys: tuple[Check, ...] = ()) -> InputRule:
    """One table entry: the validators the provider runs on an input, and where they are defined."""
    return InputRule(checks=tuple(checks), source=_cited(source), key_checks=keys)


def unconstrained(source: str) -> InputRule:
    """An input the provider passes through without a ValidateFunc (the citation says where)."""
    return InputRule(checks=(), source=f"no constraint upstream: {_cited(source)}")


def problems(entry: InputRule, value: Any, key: str | None = None) -> list[str]:
    """The rules `value` (and, for a map input, its `key`) breaks."""
    found = [check.rule for check in entry.checks if not check.ok(value)]
    if key is not None:
        found += [f"key {check.rule}" for check in entry.key_checks if not check.ok(key)]
    return found
