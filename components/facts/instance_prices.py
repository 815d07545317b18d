"""On-demand EC2 prices (Linux, shared tenancy, USD per hour) of every instance type the stacks can launch,
in the regions the stacks use: the one price table. Pinned, never fetched: the synth makes no network call.
`python preflight.py --stack STACK --check prices` compares it with the AWS Pricing API (docs/cost.md).

Where each figure comes from (`SOURCES`; every row names one):
- `vantage`: instances.vantage.sh's data (AWS's price list, re-published) as vendored by tsaol/aws-gpu @
  77fcd9fe1d06, data/<family>_instances.js ("Last updated: 2026-01-21"), `pricing.<region>.onDemand`. A region
  that file does not list for a type is `NOT_OFFERED` there (e.g. g5, g6, g6e, g6f, p4d in us-west-1).
  Its us-east-1 figures equal aws/karpenter-provider-aws v1.14.1 pkg/providers/pricing/zz_generated.pricing_aws.go
  (generated 2026-07-06) for all 38 types: the prices have not moved between the two dates.
- `estimate`: no offline source lists the region (the m6i/m7i CPU types). us-west-2: the us-east-1 figure of
  the Karpenter v1.14.1 table (us-west-2 equals us-east-1 for every one of the 38 GPU types above); us-west-1:
  the author's reading of the AWS on-demand page for m6i, and m7i = m6i x 1.05 (the m7i/m6i ratio of every
  size in the Karpenter table). Marked in the summary; `--check prices` is how to confirm them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

PRICES_DATE: Final = "2026-01-21"
REGIONS: Final = ("us-west-1", "us-west-2")
SOURCES: Final = {
    "vantage": "instances.vantage.sh data via tsaol/aws-gpu@77fcd9fe1d06 (2026-01-21); us-east-1 cross-checked with "
    "aws/karpenter-provider-aws v1.14.1 zz_generated.pricing_aws.go (2026-07-06)",
    "estimate": "estimate, no offline source for this region (see components/facts/instance_prices.py); "
    "confirm with `preflight.py --check prices`",
}
NOT_OFFERED: Final = None

# type -> (us-west-1, us-west-2); NOT_OFFERED where the source lists no price for the region.
_VANTAGE: Final[dict[str, tuple[float | None, float | None]]] = {
    "g4dn.xlarge": (0.631, 0.526), "g4dn.2xlarge": (0.902, 0.752), "g4dn.4xlarge": (1.445, 1.204),
    "g4dn.8xlarge": (2.611, 2.176), "g4dn.12xlarge": (4.694, 3.912), "g4dn.16xlarge": (5.222, 4.352),
    "g4dn.metal": (9.389, 7.824),
    "g5.xlarge": (NOT_OFFERED, 1.006), "g5.2xlarge": (NOT_OFFERED, 1.212), "g5.4xlarge": (NOT_OFFERED, 1.624),
    "g5.8xlarge": (NOT_OFFERED, 2.448), "g5.12xlarge": (NOT_OFFERED, 5.672), "g5.16xlarge": (NOT_OFFERED, 4.096),
    "g5.24xlarge": (NOT_OFFERED, 8.144), "g5.48xlarge": (NOT_OFFERED, 16.288),
    "g6.xlarge": (NOT_OFFERED, 0.8048), "g6.2xlarge": (NOT_OFFERED, 0.9776), "g6.4xlarge": (NOT_OFFERED, 1.3232),
    "g6.8xlarge": (NOT_OFFERED, 2.0144), "g6.12xlarge": (NOT_OFFERED, 4.6016), "g6.16xlarge": (NOT_OFFERED, 3.3968),
    "g6.24xlarge": (NOT_OFFERED, 6.6752), "g6.48xlarge": (NOT_OFFERED, 13.3504),
    "g6e.xlarge": (NOT_OFFERED, 1.861), "g6e.2xlarge": (NOT_OFFERED, 2.24208), "g6e.4xlarge": (NOT_OFFERED, 3.00424),
    "g6e.8xlarge": (NOT_OFFERED, 4.52856), "g6e.12xlarge": (NOT_OFFERED, 10.49264),
    "g6e.16xlarge": (NOT_OFFERED, 7.57719), "g6e.24xlarge": (NOT_OFFERED, 15.06559),
    "g6e.48xlarge": (NOT_OFFERED, 30.13118),
    # g6f (fractional L4): priced for the GPU-isolation work; not in the GPU catalog yet.
    "g6f.large": (NOT_OFFERED, 0.202), "g6f.xlarge": (NOT_OFFERED, 0.2375), "g6f.2xlarge": (NOT_OFFERED, 0.475),
    "g6f.4xlarge": (NOT_OFFERED, 0.95),
    "p4d.24xlarge": (NOT_OFFERED, 21.95764),
    "p5.4xlarge": (NOT_OFFERED, 6.88), "p5.48xlarge": (68.8, 55.04),
}  # fmt: skip

# System nodes and the CPU user pool (m6i/m7i, large..2xlarge): see the module docstring.
_ESTIMATES: Final[dict[str, tuple[float | None, float | None]]] = {
    "m6i.large": (0.112, 0.096), "m6i.xlarge": (0.224, 0.192), "m6i.2xlarge": (0.448, 0.384),
    "m7i.large": (0.1176, 0.1008), "m7i.xlarge": (0.2352, 0.2016), "m7i.2xlarge": (0.4704, 0.4032),
}  # fmt: skip

# The CPU types the stacks may launch: system nodes and the CPU user pool's families and sizes.
CPU_INSTANCE_TYPES: Final = tuple(sorted(_ESTIMATES))


class PriceError(LookupError):
    """A type or region the table does not hold, or a type not offered in that region."""


@dataclass(frozen=True)
class PriceEntry:
    instance_type: str
    region: str
    usd_per_hour: float | None  # None: not offered in the region
    source: str  # a key of SOURCES

    @property
    def offered(self) -> bool:
        return self.usd_per_hour is not None

    @property
    def estimate(self) -> bool:
        return self.source == "estimate"


def _row(instance_type: str) -> tuple[tuple[float | None, float | None], str]:
    if instance_type in _VANTAGE:
        return _VANTAGE[instance_type], "vantage"
    if instance_type in _ESTIMATES:
        return _ESTIMATES[instance_type], "estimate"
    raise PriceError(f"{instance_type}: no price in components/facts/instance_prices.py; add it with its source")


def entry(region: str, instance_type: str) -> PriceEntry:
    if region not in REGIONS:
        raise PriceError(f"{region}: the price table covers {', '.join(REGIONS)}; add the region with its source")
    prices, source = _row(instance_type)
    return PriceEntry(instance_type, region, prices[REGIONS.index(region)], source)


def hourly(region: str, instance_type: str) -> float:
    """USD per hour; PriceError when the table has no figure or the type is not offered in the region."""
    found = entry(region, instance_type)
    if found.usd_per_hour is None:
        raise PriceError(f"{instance_type} is not offered in {region} (source: {SOURCES[found.source]})")
    return found.usd_per_hour
