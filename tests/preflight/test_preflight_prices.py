"""`preflight.py --check prices`: the pinned price table against `aws pricing get-products`, answered by a fake
`aws` executable on PATH (tests/support/fake_aws.py: longest matching argument prefix wins, every call logged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import preflight
import preflight_prices
from components.facts import instance_prices
from tests.support import fake_aws as fake_aws_cli
from tests.support.settings import settings_for

STAGING = settings_for("staging")


def price_list(instance_type: str, usd: float) -> dict[str, Any]:
    """A get-products answer as the CLI prints it: PriceList holds JSON strings (Price List Query API)."""
    sku = "SKU" + instance_type.replace(".", "")
    product = {
        "product": {"productFamily": "Compute Instance", "sku": sku, "attributes": {"instanceType": instance_type}},
        "serviceCode": "AmazonEC2",
        "terms": {
            "OnDemand": {
                f"{sku}.JRTCKXETXF": {
                    "priceDimensions": {
                        f"{sku}.JRTCKXETXF.6YS6EN2CT7": {
                            "unit": "Hrs",
                            "pricePerUnit": {"USD": f"{usd:.10f}"},
                            "description": f"${usd} per On Demand Linux {instance_type} Instance Hour",
                        }
                    },
                    "sku": sku,
                    "termAttributes": {},
                }
            }
        },
        "version": "20261120000000",
    }
    return {"stdout": {"FormatVersion": "aws_v1", "NextToken": None, "PriceList": [json.dumps(product)]}}


def answers(**prices: float) -> dict[str, Any]:
    table = {t: instance_prices.hourly(STAGING.region, t) for t in preflight_prices.launchable_types(STAGING)}
    table |= {t.replace("_", "."): usd for t, usd in prices.items()}
    found: dict[str, Any] = {"sts get-caller-identity": {"stdout": {"Account": "111122223333", "Arn": "arn"}}}
    for instance_type, usd in table.items():
        key = " ".join(preflight_prices.get_products_args(instance_type, STAGING.region)[:6])
        found[key] = price_list(instance_type, usd)
    return found


@pytest.fixture
def fake_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    def answer(**prices: float) -> Path:
        return fake_aws_cli.install(tmp_path, monkeypatch, answers(**prices))

    return answer


def _run(capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = preflight.main(["--stack", "staging", "--check", "prices"])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_pinned_prices_pass_and_the_question_is_asked_in_us_east_1(fake_aws: Any, capsys: Any) -> None:
    log = fake_aws()
    code, out = _run(capsys)
    assert code == 0, out
    asked = [line for line in log.read_text().splitlines() if line.startswith("pricing get-products")]
    assert len(asked) == 3  # g4dn.xlarge, g4dn.2xlarge, m6i.large
    for line in asked:
        assert "--service-code AmazonEC2" in line and "Field=regionCode,Value=us-west-1" in line
        assert "Field=operatingSystem,Value=Linux" in line and "Field=tenancy,Value=Shared" in line
        assert line.endswith("--region us-east-1 --output json")
    assert "g4dn.xlarge in us-west-1: $0.631/h on AWS, $0.631/h pinned (0.0%)" in out


def test_a_drift_over_five_percent_fails_naming_the_type(fake_aws: Any, capsys: Any) -> None:
    fake_aws(g4dn_xlarge=0.70, m6i_large=0.115)  # +10.9% and +2.7%
    code, out = _run(capsys)
    assert code == 1
    assert "prices: FAILED: g4dn.xlarge in us-west-1: $0.7/h on AWS, $0.631/h pinned (10.9% apart, over 5%)" in out
    assert "prices: ok: m6i.large in us-west-1: $0.115/h on AWS, $0.112/h pinned (2.7%)" in out


def test_not_offered_and_no_longer_listed_are_failures() -> None:
    assert preflight_prices._compare("g5.xlarge", "us-west-1", None, []) == (
        True,
        "g5.xlarge in us-west-1: not offered, as pinned",
    )
    ok, message = preflight_prices._compare("g5.xlarge", "us-west-1", None, [1.2])
    assert not ok and "the table says not offered" in message
    ok, message = preflight_prices._compare("g4dn.xlarge", "us-west-1", 0.631, [])
    assert not ok and "AWS lists no on-demand price" in message


def test_the_answer_is_read_from_price_list_json_strings() -> None:
    answer = price_list("g4dn.xlarge", 0.526)["stdout"]
    assert isinstance(answer["PriceList"][0], str)
    assert preflight_prices.on_demand_hourly(answer) == [0.526]
    assert preflight_prices.on_demand_hourly({"PriceList": []}) == []


def test_prices_is_asked_for_not_run_by_default() -> None:
    assert "prices" in preflight.CHECKS and "prices" not in preflight.DEFAULT_CHECKS
