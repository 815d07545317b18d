"""Kubernetes quantities (components/facts/quantity.py): apimachinery's grammar, values in base units."""

from __future__ import annotations

from decimal import Decimal

import pytest

from components.facts import quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("16", Decimal(16)),
        ("500m", Decimal("0.5")),
        ("0.5", Decimal("0.5")),
        ("64Gi", Decimal(64 * 2**30)),
        ("64G", Decimal(64 * 10**9)),
        ("128k", Decimal(128000)),
        ("1Ei", Decimal(2**60)),
        ("1e3", Decimal(1000)),
        ("25E-2", Decimal("0.25")),
        ("100u", Decimal("0.0001")),
        ("2E", Decimal(2 * 10**18)),
    ],
)
def test_parse(text: str, value: Decimal) -> None:
    assert quantity.parse(text) == value


@pytest.mark.parametrize("text", ["64GB", "lots", "-1", "1.2.3", "Gi", "64 Gi", "1K", ""])
def test_not_a_quantity(text: str) -> None:
    with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
        quantity.parse(text)


def test_times() -> None:
    assert quantity.times("250m", 3) == quantity.parse("750m")
