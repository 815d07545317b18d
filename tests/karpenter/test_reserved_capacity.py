"""Reserved capacity: `karpenter.nodePools[].capacityReservations` -> the EC2NodeClass's capacityReservationSelectorTerms
and the `reserved` capacity type, valid against the v1.14.1 CRDs (schema and CEL), and the controller's feature gate."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from components.karpenter import controller_inputs, gpu_node_pool, node_class_basis
from components.renderers.karpenter import karpenter_manifests, karpenter_values
from components.settings import SettingsError, StackSettings, load_settings
from offline.config_files import read_stack_config
from tests.conftest import PROJECT_DIR
from tests.support.crd_validation import validate_custom_resource

STAGING = dict(read_stack_config(PROJECT_DIR, "staging").values)
KEY = "gpu-platform:karpenter.nodePools[0].capacityReservations"


def with_reservations(terms: Any) -> dict[str, str]:
    values = dict(STAGING)
    karpenter = json.loads(values["gpu-platform:karpenter"])
    karpenter["nodePools"][0]["capacityReservations"] = terms
    values["gpu-platform:karpenter"] = json.dumps(karpenter)
    return values


def reserved() -> StackSettings:
    return load_settings(
        with_reservations([{"id": "cr-0123456789abcdef0"}, {"tags": {"team": "ml-platform", "purpose": "*"}}])
    )


def test_reservations_become_selector_terms_and_the_reserved_capacity_type() -> None:
    settings = reserved()
    (pool,) = settings.karpenter.node_pools
    node_class = karpenter_manifests.node_class(
        pool, settings.sharing_for(pool), node_class_basis(settings), node_role_name="lab-node"
    )
    assert node_class["spec"]["capacityReservationSelectorTerms"] == [
        {"id": "cr-0123456789abcdef0"},
        {"tags": {"team": "ml-platform", "purpose": "*"}},
    ]
    node_pool = gpu_node_pool(settings, pool)
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
    settings = load_settings(STAGING)
    (pool,) = settings.karpenter.node_pools
    assert (
        "capacityReservationSelectorTerms"
        not in karpenter_manifests.node_class(
            pool, settings.sharing_for(pool), node_class_basis(settings), node_role_name="n"
        )["spec"]
    )
    gates = karpenter_values.helm_values(controller_inputs(settings), cluster_endpoint="e", interruption_queue="q")[
        "settings"
    ]
    assert gates["featureGates"]["reservedCapacity"] is False


def test_the_crd_cel_rules_are_what_the_settings_enforce_earlier() -> None:
    settings = reserved()
    node_class = karpenter_manifests.node_class(
        settings.karpenter.node_pools[0],
        settings.sharing_for(settings.karpenter.node_pools[0]),
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
        load_settings(with_reservations(terms))
    found = dict(caught.value.problems)
    assert key in found, found
    assert words in found[key]
