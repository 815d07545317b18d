"""The offline model of the API server's quantity handling (tests/support/apiserver_model.py), checked against upstream.

The expected strings are upstream's own test tables (kubernetes/kubernetes
`staging/src/k8s.io/apimachinery/pkg/api/resource/quantity_test.go`: `TestQuantityParse`, `TestQuantityString`,
`TestQuantityParseEmit`), so the model that the GPU guard's proof rests on is pinned to the real behaviour.
The last tests are that proof: for every quantity the API server accepts for `nvidia.com/gpu`, the string the
policy sees is `"0"` exactly when the quantity is less than one whole GPU.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import cel
import pytest
from cel.stdlib import add_stdlib_to_context

from tests.support.apiserver_model import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    QuantityError,
    canonical,
    milli_value,
    parse_quantity,
)

F = Fraction

# TestQuantityString: (value, format) -> canonical string, and an alternate spelling that parses to it.
CANONICAL = [
    (F(2**30), BINARY_SI, "1Gi", "1024Mi"),
    (F(300 * 2**20), BINARY_SI, "300Mi", "307200Ki"),
    (F(6 * 1024), BINARY_SI, "6Ki", ""),
    (F(1001 * 2**30), BINARY_SI, "1001Gi", "1025024Mi"),
    (F(2**40), BINARY_SI, "1Ti", "1024Gi"),
    (F(5), BINARY_SI, "5", "5000m"),
    (F(1, 2), BINARY_SI, "500m", "0.5"),
    (F(10**9), DECIMAL_SI, "1G", "1000M"),
    (F(10**9), DECIMAL_SI, "1G", "0.001T"),
    (F(1, 1000), DECIMAL_SI, "1m", "1000u"),
    (F(80, 1000), DECIMAL_SI, "80m", ""),
    (F(1080, 1000), DECIMAL_SI, "1080m", "1.08"),
    (F(108, 100), DECIMAL_SI, "1080m", "1080000000n"),
    (F(300 * 10**6), DECIMAL_SI, "300M", ""),
    (F(10**12), DECIMAL_SI, "1T", ""),
    (F(10**18), DECIMAL_SI, "1E", ""),
    (F(10**21), DECIMAL_SI, "1e21", "1000E"),
    (F(1234567 * 10**6), DECIMAL_SI, "1234567M", ""),
    (F(1234567, 1000), BINARY_SI, "1234567m", ""),
    (F(3000), DECIMAL_SI, "3k", ""),
    (F(1025), BINARY_SI, "1025", ""),
    (F(0), DECIMAL_SI, "0", ""),
    (F(0), BINARY_SI, "0", ""),
    (F(10**9), DECIMAL_EXPONENT, "1e9", ".001e12"),
    (F(1, 1000), DECIMAL_EXPONENT, "1e-3", "0.001e0"),
    (F(1, 10**9), DECIMAL_EXPONENT, "1e-9", "1000e-12"),
    (F(80, 1000), DECIMAL_EXPONENT, "80e-3", ""),
    (F(300 * 10**6), DECIMAL_EXPONENT, "300e6", ""),
    (F(3000), DECIMAL_EXPONENT, "3e3", ""),
    (F(0), DECIMAL_EXPONENT, "0", "00"),
    (F(1, 10**9), DECIMAL_SI, "1n", ""),
    (F(1080, 10**9), DECIMAL_SI, "1080n", ""),
    (F(1080, 10**6), DECIMAL_SI, "1080u", ""),
]

# TestQuantityParse (value and format after parsing) and TestQuantityParseEmit (string after parsing).
PARSED = [
    ("0Ki", F(0), BINARY_SI),
    ("0n", F(0), DECIMAL_SI),
    ("1Ki", F(1024), BINARY_SI),
    ("50k", F(50000), DECIMAL_SI),
    ("1E-3", F(1, 1000), DECIMAL_EXPONENT),
    ("100.035k", F(100035), DECIMAL_SI),
    ("0.0005k", F(1, 2), DECIMAL_SI),
    ("1.3E+6", F(1300000), DECIMAL_EXPONENT),
    ("3.001n", F(4, 10**9), DECIMAL_SI),
    ("0.0000000001", F(1, 10**9), DECIMAL_SI),
    ("0.00000012345", F(124, 10**9), DECIMAL_SI),
    ("0.5Mi", F(2**19), BINARY_SI),
    ("0.000000000001Ki", F(2, 10**9), DECIMAL_SI),
    (".0001k", F(1, 10), DECIMAL_SI),
    ("1.", F(1), DECIMAL_SI),
    ("1.G", F(10**9), DECIMAL_SI),
]
EMITTED = [
    ("1024Mi", "1Gi"),
    ("1000M", "1G"),
    (".001Ki", "1024m"),
    (".000000001Ki", "1024n"),
    (".000000000001Ki", "2n"),
]
INVALID = ["1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1x", ""]


@pytest.mark.parametrize(("value", "fmt", "expected", "alternate"), CANONICAL)
def test_canonical_form_matches_upstream(value: Fraction, fmt: str, expected: str, alternate: str) -> None:
    assert canonical(value, fmt) == expected
    parsed = parse_quantity(expected)
    assert parsed.cached == expected  # a canonical string is kept as written
    assert parsed.value == value
    if alternate:
        assert parse_quantity(alternate).cached is None
        assert parse_quantity(alternate).string() == expected


@pytest.mark.parametrize(("text", "value", "fmt"), PARSED)
def test_parse_matches_upstream(text: str, value: Fraction, fmt: str) -> None:
    for sign, prefix in ((1, ""), (1, "+"), (-1, "-")):
        parsed = parse_quantity(prefix + text)
        assert (parsed.value, parsed.format) == (sign * value, fmt)


@pytest.mark.parametrize(("text", "expected"), EMITTED)
def test_emitted_string_matches_upstream(text: str, expected: str) -> None:
    assert parse_quantity(text).string() == expected
    assert parse_quantity("-" + text).string() == "-" + expected


@pytest.mark.parametrize("text", INVALID)
def test_malformed_quantities_do_not_decode(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_the_offline_cel_engine_has_no_kubernetes_quantity_library() -> None:
    """Why the guard compares the normalised string instead of calling `quantity()`: the engine the tests
    run cannot evaluate it (the API server has it since 1.28: kubernetes/kubernetes
    `staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`), so a `quantity()` rule could not be proven here."""
    context = cel.Context(variables={})
    add_stdlib_to_context(context)
    with pytest.raises(Exception, match="quantity"):
        cel.compile("quantity('1').isGreaterThan(quantity('0'))").execute(context)


# --- the proof the guard rests on ------------------------------------------------------------------

MANTISSAS = [
    "0",
    "00",
    "0.0",
    ".",
    "0.",
    "1",
    "1.0",
    "2",
    "3",
    "8",
    "16",
    "0.5",
    "0.001",
    "0.0001",
    "1.5",
    "1000",
    "1024",
]
SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "Ki", "Mi", "Gi", "e0", "E0", "e3", "e-3", "E+1", "e-9", "e-10"]
SIGNS = ["", "+", "-"]


def _accepted_for_an_extended_resource(text: str | int | float) -> tuple[bool, Fraction, str]:
    """Whether the API server accepts `text` as an `nvidia.com/gpu` quantity, its value, and the policy's string."""
    quantity = parse_quantity(text)
    accepted = quantity.value >= 0 and milli_value(quantity) % 1000 == 0
    return accepted, quantity.value, quantity.string()


def test_for_every_accepted_gpu_quantity_the_string_is_zero_exactly_below_one_whole_gpu() -> None:
    forms = ["".join(parts) for parts in itertools.product(SIGNS, MANTISSAS, SUFFIXES)]
    accepted = 0
    for text in forms:
        ok, value, seen = _accepted_for_an_extended_resource(text)
        if not ok:
            continue
        accepted += 1
        assert value.denominator == 1 and value >= 0, text  # a whole number of GPUs
        assert (seen == "0") == (value < 1), (text, seen)
        assert seen[0] in "+123456789" or seen == "0", (text, seen)
    assert accepted > 300  # the grid is not vacuous


@pytest.mark.parametrize(
    ("raw", "seen"),
    [
        (0, "0"),
        ("0", "0"),
        (0.0, "0"),
        ("0.0", "0"),
        ("0m", "0"),
        ("0Ki", "0"),
        ("0e3", "0"),
        ("-0", "0"),
        ("+0", "0"),
        ("1000m", "1"),
        (1, "1"),
        (1.0, "1"),
        ("1", "1"),
        ("+1", "+1"),
        ("1e0", "1e0"),  # already canonical in the int64 fast path: kept as written
        ("0.001k", "1"),
        ("1Ki", "1Ki"),
        ("1e3", "1e3"),
    ],
)
def test_the_forms_named_in_the_issue(raw: str | int | float, seen: str) -> None:
    ok, _, string = _accepted_for_an_extended_resource(raw)
    assert ok
    assert string == seen


@pytest.mark.parametrize("raw", ["500m", "0.5", "1.5", "1001m", "1n", "100u", "-1", "-1000m", "1e-3"])
def test_fractional_and_negative_gpus_are_rejected_by_the_api_server(raw: str) -> None:
    ok, _, _ = _accepted_for_an_extended_resource(raw)
    assert not ok
