"""The pinned price table: every type the stacks and the catalog can launch has a price or says "not offered"."""

from __future__ import annotations

import pytest

from components.facts import gpu_catalog, instance_prices
from tests.conftest import STACKS
from tests.support.settings import settings_for

# The CPU user pool's families and sizes (m6i/m7i, large..2xlarge) and g6f for GPU isolation, written by hand.
CPU_POOL_TYPES = [f"{family}.{size}" for family in ("m6i", "m7i") for size in ("large", "xlarge", "2xlarge")]
G6F_TYPES = ["g6f.large", "g6f.xlarge", "g6f.2xlarge", "g6f.4xlarge"]


def _launchable() -> set[str]:
    types = set(gpu_catalog.GPU_INSTANCE_TYPES) | set(CPU_POOL_TYPES) | set(G6F_TYPES)
    for stack in STACKS:
        settings = settings_for(stack)
        types |= set(settings.system_nodes.instance_types) | set(settings.gpu_instance_types)
    return types


@pytest.mark.parametrize("region", instance_prices.REGIONS)
def test_every_launchable_type_has_a_price_or_says_not_offered(region: str) -> None:
    for instance_type in sorted(_launchable()):
        found = instance_prices.entry(region, instance_type)
        assert found.source in instance_prices.SOURCES
        assert found.usd_per_hour is None or 0 < found.usd_per_hour < 200, instance_type


def test_the_stacks_regions_are_covered_and_their_pools_types_offered() -> None:
    for stack in STACKS:
        settings = settings_for(stack)
        assert settings.region in instance_prices.REGIONS
        for instance_type in (*settings.gpu_instance_types, *settings.system_nodes.instance_types):
            assert instance_prices.hourly(settings.region, instance_type) > 0


def test_figures_from_the_source() -> None:
    # Spot checks against the vendored data (tsaol/aws-gpu data/g4dn_instances.js, p5_instances.js).
    assert instance_prices.hourly("us-west-1", "g4dn.xlarge") == 0.631
    assert instance_prices.hourly("us-west-2", "g4dn.xlarge") == 0.526
    assert instance_prices.hourly("us-west-1", "p5.48xlarge") == 68.8
    assert instance_prices.entry("us-west-1", "m6i.large").estimate


def test_not_offered_and_unknown_are_errors_that_say_so() -> None:
    assert not instance_prices.entry("us-west-1", "g5.xlarge").offered
    with pytest.raises(instance_prices.PriceError, match="not offered in us-west-1"):
        instance_prices.hourly("us-west-1", "g5.xlarge")
    with pytest.raises(instance_prices.PriceError, match="no price"):
        instance_prices.hourly("us-west-2", "c5.large")
    with pytest.raises(instance_prices.PriceError, match="covers us-west-1, us-west-2"):
        instance_prices.hourly("eu-west-1", "g4dn.xlarge")


def test_within_a_family_a_bigger_size_costs_more_except_where_aws_says_otherwise() -> None:
    # The packing model ranks by GPUs then size (karpenter_packing.price_rank); the table agrees for 1-GPU sizes.
    for family in ("g4dn", "g5", "g6", "g6e"):
        one_gpu = [t for t in gpu_catalog.instance_types_of_family(family) if gpu_catalog.gpu_count(t) == 1]
        ranked = sorted(one_gpu, key=lambda t: instance_prices.hourly("us-west-2", t))
        sizes = [t.partition(".")[2] for t in ranked]
        assert sizes[:2] == ["xlarge", "2xlarge"], family
