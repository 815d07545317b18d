"""`python preflight.py --stack STACK --check prices`: the pinned price table against the AWS Pricing API.

For every instance type the stack can launch (its GPU pools' types, the managed GPU group's, the system nodes')
asks `aws pricing get-products` (the Price List Query API, served from us-east-1) for the on-demand Linux,
shared-tenancy price in the stack's region (`regionCode` filter) and compares it with
`components/facts/instance_prices.py`. Fails naming each type whose price moved by more than 5%, a type AWS
prices where the table says "not offered", and one the table prices that AWS no longer lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from components.facts import instance_prices
from components.settings import StackSettings

PRICING_REGION = "us-east-1"  # the Price List Query API's endpoint region
DRIFT = 0.05
# On-demand Linux, shared tenancy, no pre-installed software, capacity actually used (not a reservation).
FILTERS = (
    ("operatingSystem", "Linux"),
    ("tenancy", "Shared"),
    ("preInstalledSw", "NA"),
    ("licenseModel", "No License required"),
    ("capacitystatus", "Used"),
)


@dataclass(frozen=True)
class PriceCheck:
    instance_type: str
    ok: bool
    asked: str
    got: str
    message: str


def launchable_types(settings: StackSettings) -> list[str]:
    types = set(settings.gpu_instance_types) | set(settings.system_nodes.instance_types)
    return sorted(types)


def get_products_args(instance_type: str, region: str) -> tuple[str, ...]:
    filters = [("instanceType", instance_type), ("regionCode", region), *FILTERS]
    return (
        "pricing", "get-products", "--service-code", "AmazonEC2",
        "--filters", *(f"Type=TERM_MATCH,Field={field},Value={value}" for field, value in filters),
    )  # fmt: skip


def on_demand_hourly(answer: dict[str, Any]) -> list[float]:
    """Distinct USD-per-hour on-demand prices in a get-products answer (each PriceList entry a JSON string)."""
    found = set()
    for text in answer.get("PriceList", []):
        product = json.loads(text) if isinstance(text, str) else text
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                usd = float(dimension.get("pricePerUnit", {}).get("USD", "0"))
                if dimension.get("unit") == "Hrs" and usd > 0:
                    found.add(usd)
    return sorted(found)


def _compare(instance_type: str, region: str, pinned: float | None, listed: list[float]) -> tuple[bool, str]:
    where = f"{instance_type} in {region}"
    if pinned is None and not listed:
        return True, f"{where}: not offered, as pinned"
    if pinned is None:
        return (
            False,
            f"{where}: AWS lists ${listed[0]}/h, the table says not offered; add the price to "
            "components/facts/instance_prices.py",
        )
    if not listed:
        return False, f"{where}: the table has ${pinned}/h, AWS lists no on-demand price; mark it not offered"
    drift = abs(listed[0] - pinned) / pinned
    if drift > DRIFT:
        return (
            False,
            f"{where}: ${listed[0]}/h on AWS, ${pinned}/h pinned ({drift:.1%} apart, over {DRIFT:.0%}); "
            "update components/facts/instance_prices.py and its date",
        )
    return True, f"{where}: ${listed[0]}/h on AWS, ${pinned}/h pinned ({drift:.1%})"


def check_prices(
    run: Callable[..., dict[str, Any] | None], command: Callable[..., str], settings: StackSettings
) -> list[PriceCheck]:
    """`run`/`command`: the preflight's AWS CLI runner for PRICING_REGION (`Aws.run`, `Aws.command`)."""
    results = []
    for instance_type in launchable_types(settings):
        args = get_products_args(instance_type, settings.region)
        try:
            pinned = instance_prices.entry(settings.region, instance_type).usd_per_hour
        except instance_prices.PriceError as exc:
            results.append(PriceCheck(instance_type, False, "(not asked)", "-", str(exc)))
            continue
        listed = on_demand_hourly(run(*args) or {})
        ok, message = _compare(instance_type, settings.region, pinned, listed)
        got = ", ".join(f"${price}/h" for price in listed) or "no on-demand price"
        results.append(PriceCheck(instance_type, ok, command(*args), got, message))
    return results
