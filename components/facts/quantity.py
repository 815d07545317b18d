"""Kubernetes resource quantities (`16`, `500m`, `64Gi`, `64G`, `1e3`): parse and compare. Pure.

The grammar is apimachinery's `Quantity` serialization format (k8s.io/apimachinery/pkg/api/resource, as
kubernetes/website content/en/docs/reference/kubernetes-api/common-definitions/quantity.md reproduces it):
`<number><suffix>` where the suffix is a binary SI unit (Ki, Mi, Gi, Ti, Pi, Ei), a decimal SI unit
(n, u, m, "", k, M, G, T, P, E) or a decimal exponent (`e3`, `E-2`). `64G` is 64 x 10^9 bytes: valid.
"""

from __future__ import annotations

import re
from decimal import Decimal

BINARY_SUFFIXES = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
DECIMAL_SUFFIXES = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
}  # fmt: skip
_QUANTITY = re.compile(
    r"^\+?(?P<number>[0-9]+(\.[0-9]*)?|\.[0-9]+)(?P<suffix>[eE][-+]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)$"
)
HELP = (
    "a number with an optional unit: binary Ki, Mi, Gi, Ti, Pi, Ei; decimal m, k, M, G, T, P, E; or an "
    "exponent like 1e3 (e.g. cpu '16' or '500m', memory '64Gi' or '64G')"
)


def parse(text: str) -> Decimal:
    """The quantity's value in base units (cores, bytes); ValueError naming the grammar when it is not one."""
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"'{text}' is not a Kubernetes quantity: {HELP}")
    number, suffix = Decimal(match["number"]), match["suffix"]
    if suffix in BINARY_SUFFIXES:
        return number * BINARY_SUFFIXES[suffix]
    if len(suffix) > 1 and suffix[0] in "eE":  # an exponent; a lone "E" is exa
        return number * Decimal(10) ** int(suffix[1:])
    return number * DECIMAL_SUFFIXES[suffix]


def times(text: str, count: int) -> Decimal:
    return parse(text) * count
