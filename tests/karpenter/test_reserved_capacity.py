"""Reserved capacity: `karpenter.nodePools[].capacityReservations` -> the EC2NodeClass's capacityReservationSelectorTerms
and the `reserved` capacity type, valid against the v1.14.1 CRDs (schema and CEL), and the controller's feature gate."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.karpenter import controller_inputs, gpu_node_pool, node_class_basis
from components.renderers.karpenter import karpenter_manifests, karpenter_values
from components.settings import SettingsError
from tests.support.crd_validation import validate_custom_resource
from tests.support.settings import settings_for

KEY = "gpu-platform:karpenter.nodePools[0].capacityReservations"


RESERVATIONS = [{"id": "cr-0123456789abcdef0"}, {"tags": {"team": "ml-platform", "purpose": "*"}}]


def test_reservations_become_selector_terms_and_the_reserved_capacity_type() -> None:
    settings = settings_for("staging", pool={"capacityReservations": RESERVATIONS})
    (pool,) = settings.karpenter.node_pools
    node_class = karpenter_manifests.node_class(
        pool, settings.resolved.pool(pool.name).sharing, node_class_basis(settings), node_role_name="lab-node"
    )
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"tags": {"team": "ml-platform", "purpose": "*"}},
    ]
    node_pool = gpu_node_pool(settings.resolved.pool(pool.name))
    (capacity,) = [
        r for r in node_pool["spec"]["template"]["spec"]["requirements"] if r["key"] == "karpenter.sh/capacity-type"
    ]
    assert capacity["values"] == ["reserved", "on-demand"]
    assert validate_custom_resource(node_class) == []
    assert validate_custom_resource(node_pool) == []
    gates = karpenter_values.helm_values(controller_inputs(settings), cluster_endpoint="e", interruption_queue="q")[
        "settings"
    ]
    assert gates["featureGates"]["reservedCapacity"] is True


def test_without_reservations_nothing_changes_and_the_gate_is_off() -> None:
    settings = settings_for("staging")
    (pool,) = settings.karpenter.node_pools
    assert (
        "capacityReservationSelectorTerms"
        not in karpenter_manifests.node_class(
            pool, settings.resolved.pool(pool.name).sharing, node_class_basis(settings), node_role_name="n"
        )["spec"]
    )
    gates = karpenter_values.helm_values(controller_inputs(settings), cluster_endpoint="e", interruption_queue="q")[
        "settings"
    ]
    assert gates["featureGates"]["reservedCapacity"] is False


def test_the_crd_cel_rules_are_what_the_settings_enforce_earlier() -> None:
    settings = settings_for("staging", pool={"capacityReservations": RESERVATIONS})
    node_class = karpenter_manifests.node_class(
        settings.karpenter.node_pools[0],
        settings.resolved.pool(settings.karpenter.node_pools[0].name).sharing,
        node_class_basis(settings),
        node_role_name="n",
    )
    empty_value = copy.deepcopy(node_class)
    empty_value["spec"]["capacityReservationSelectorTerms"] = [{"tags": {"team": ""}}]
    assert any("empty tag keys or values" in e for e in validate_custom_resource(empty_value))
    empty_term = copy.deepcopy(node_class)
    empty_term["spec"]["capacityReservationSelectorTerms"] = [{}]
    assert any("expected at least one" in e for e in validate_custom_resource(empty_term))
    bad_id = copy.deepcopy(node_class)
    bad_id["spec"]["capacityReservationSelectorTerms"] = [{"id": "odcr-1"}]
    assert validate_custom_resource(bad_id) != []


@pytest.mark.parametrize(
    ("terms", "key", "words"),
    [
        ([{"id": "odcr-1"}], f"{KEY}[0].id", "capacity reservation id"),
        ([{"id": "cr-0123456789abcdef0", "tags": {"a": "b"}}], f"{KEY}[0]", "exactly one of id or tags"),
        ([{}], f"{KEY}[0]", "exactly one of id or tags"),
        ([{"tags": {"team": ""}}], f"{KEY}[0].tags.team", "at least 1"),
        ([{"tags": {}}], f"{KEY}[0].tags", "at least 1"),
        ([{"id": "cr-1"}] * 31, KEY, "at most 30"),
    ],
)
def test_bad_reservations_name_their_key(terms: Any, key: str, words: str) -> None:
    with pytest.raises(SettingsError) as caught:
        settings_for("staging", pool={"capacityReservations": terms})
    found = dict(caught.value.problems)
    assert key in found, found
    assert words in found[key]
