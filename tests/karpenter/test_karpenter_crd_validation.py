"""The offline CRD validator itself: every vendored CEL rule compiles, valid objects pass, and each
kind of mistake the apiserver rejects is rejected here too (how: docs/validation.md, custom resources)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.crd_validation import (
    KARPENTER_CRD_DIR,
    apply_structural_defaults,
    compile_rule,
    crd_to_jsonschema,
    is_transition_rule,
    iter_cel_rules,
    load_crd_file,
    load_crds,
    require_schema_dir,
    validate_custom_resource,
)

# Known-good objects, accepted by the v1.14.1 CRDs: the negative cases mutate one field each.
VALID_NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "gpu"},
    "spec": {
        "template": {
            "metadata": {"labels": {"nvidia.com/gpu.present": "true"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                "requirements": [
                    {"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": ["nvidia"]},
                    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5", "g6", "g6e"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]},
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                ],
                "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
                "expireAfter": "720h",
            },
        },
        "limits": {"cpu": "256", "memory": "1024Gi"},
        "disruption": {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "5m",
            "budgets": [{"nodes": "10%"}],
        },
    },
}
VALID_NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "gpu"},
    "spec": {
        "role": "KarpenterNodeRole-demo",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "demo"}}],
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {"volumeSize": "100Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True},
            }
        ],
    },
}
VALID_OVERLAY: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1alpha1",
    "kind": "NodeOverlay",
    "metadata": {"name": "gpu-timeslice-1gpu"},
    "spec": {
        "weight": 10,
        "requirements": [
            {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["gpu"]},
            {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "In", "values": ["1"]},
        ],
        "capacity": {"nvidia.com/gpu": 4},
    },
}

Mutation = Callable[[dict[str, Any]], None]


def _np_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj["spec"]["template"]["spec"]


def _set_requirement(index: int, requirement: dict[str, Any]) -> Mutation:
    def mutate(obj: dict[str, Any]) -> None:
        requirements = _np_spec(obj)["requirements"]
        if index < len(requirements):
            requirements[index] = requirement
        else:
            requirements.append(requirement)

    return mutate


def _rename_node_class_ref(obj: dict[str, Any]) -> None:
    _np_spec(obj)["nodeClasRef"] = _np_spec(obj).pop("nodeClassRef")


# (case id, valid base, mutation, expected fragment of one error) — one per mechanism (schema, strict, CEL), plus
# the ObjectMeta and int32 checks this validator adds.
NEGATIVE_CASES: list[tuple[str, dict[str, Any], Mutation, str]] = [
    (
        "np-in-empty-values",
        VALID_NODEPOOL,
        _set_requirement(0, {"key": "karpenter.k8s.aws/instance-gpu-manufacturer", "operator": "In", "values": []}),
        "requirements with operator 'In' must have a value defined",
    ),
    (
        "np-restricted-label-domain",
        VALID_NODEPOOL,
        _set_requirement(4, {"key": "karpenter.sh/custom", "operator": "In", "values": ["x"]}),
        '.spec.template.spec.requirements[4].key: label domain "karpenter.sh" is restricted',
    ),
    (
        "np-Lt-non-int",
        VALID_NODEPOOL,
        _set_requirement(4, {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["many"]}),
        ".spec.template.spec.requirements: CEL error in",
    ),
    (
        "np-bad-enum",
        VALID_NODEPOOL,
        lambda obj: obj["spec"]["disruption"].update(consolidationPolicy="WhenIdle"),
        "spec.disruption.consolidationPolicy: 'WhenIdle' is not one of ['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced']",
    ),
    (
        "np-typo-field",
        VALID_NODEPOOL,
        _rename_node_class_ref,
        "Additional properties are not allowed ('nodeClasRef' was unexpected)",
    ),
    (
        "np-budget-schedule-without-duration",
        VALID_NODEPOOL,
        lambda obj: obj["spec"]["disruption"]["budgets"].append({"nodes": "0", "schedule": "@daily"}),
        ".spec.disruption.budgets: 'schedule' must be set with 'duration'",
    ),
    (
        "np-weight-out-of-range",
        VALID_NODEPOOL,
        lambda obj: obj["spec"].update(weight=101),
        "spec.weight: 101 is greater than the maximum of 100",
    ),
    (
        "np-invalid-name",
        VALID_NODEPOOL,
        lambda obj: obj["metadata"].update(name="GPU_Pool"),
        "metadata.name: 'GPU_Pool' does not match",
    ),
    (
        "nc-alias-plus-id",
        VALID_NODECLASS,
        lambda obj: obj["spec"]["amiSelectorTerms"].append({"id": "ami-0123456789abcdef0"}),
        ".spec.amiSelectorTerms: 'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms",
    ),
    (
        "nc-unknown-alias-family",
        VALID_NODECLASS,
        lambda obj: obj["spec"]["amiSelectorTerms"][0].update(alias="ubuntu@latest"),
        ".spec.amiSelectorTerms[0].alias: family is not supported",
    ),
    (
        "nc-role-and-instanceProfile",
        VALID_NODECLASS,
        lambda obj: obj["spec"].update(instanceProfile="KarpenterNodeInstanceProfile-demo"),
        ".spec: must specify exactly one of ['role', 'instanceProfile']",
    ),
    (
        "nc-restricted-tag",
        VALID_NODECLASS,
        lambda obj: obj["spec"].update(tags={"kubernetes.io/cluster/demo": "owned"}),
        ".spec.tags: tag contains a restricted tag matching kubernetes.io/cluster/",
    ),
    (
        "nc-systemReserved-bad-key",
        VALID_NODECLASS,
        lambda obj: obj["spec"].update(kubelet={"systemReserved": {"nvidia.com/gpu": "1"}}),
        ".spec.kubelet.systemReserved: valid keys for systemReserved are ['cpu','memory','ephemeral-storage','pid']",
    ),
    (
        "nc-volumeSize-int",
        VALID_NODECLASS,
        lambda obj: obj["spec"]["blockDeviceMappings"][0]["ebs"].update(volumeSize=100),
        "spec.blockDeviceMappings.0.ebs.volumeSize: 100 is not of type 'string'",
    ),
    (
        "nc-maxPods-beyond-int32",
        VALID_NODECLASS,
        lambda obj: obj["spec"].update(kubelet={"maxPods": 2**31}),
        "spec.kubelet.maxPods: 2147483648 is not a 'int32'",
    ),
    (
        "ov-restricted-capacity",
        VALID_OVERLAY,
        lambda obj: obj["spec"]["capacity"].update(cpu="4"),
        ".spec.capacity: invalid resource restricted",
    ),
    (
        "ov-price-and-adjustment",
        VALID_OVERLAY,
        lambda obj: obj["spec"].update(price="1.5", priceAdjustment="-10%"),
        ".spec: cannot set both 'price' and 'priceAdjustment'",
    ),
    (
        "ov-bad-quantity",
        VALID_OVERLAY,
        lambda obj: obj["spec"]["capacity"].update({"nvidia.com/gpu": "4 GPUs"}),
        "spec.capacity.nvidia.com/gpu: '4 GPUs' does not match",
    ),
    (
        "ov-notin-empty-values",
        VALID_OVERLAY,
        lambda obj: obj["spec"]["requirements"].append(
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "NotIn", "values": []}
        ),
        "requirements with operator 'NotIn' must have a value defined",
    ),
]


@pytest.mark.parametrize("valid", [VALID_NODEPOOL, VALID_NODECLASS, VALID_OVERLAY], ids=lambda o: o["kind"])
def test_reference_objects_are_accepted(valid: dict[str, Any]) -> None:
    assert validate_custom_resource(valid) == []


@pytest.mark.parametrize(
    ("base", "mutate", "expected"), [c[1:] for c in NEGATIVE_CASES], ids=[c[0] for c in NEGATIVE_CASES]
)
def test_broken_objects_are_rejected(base: dict[str, Any], mutate: Mutation, expected: str) -> None:
    broken = copy.deepcopy(base)
    mutate(broken)
    errors = validate_custom_resource(broken)
    assert any(expected in error for error in errors), errors


def test_every_kind_has_a_rejected_broken_object() -> None:
    assert {case[1]["kind"] for case in NEGATIVE_CASES} == {"NodePool", "EC2NodeClass", "NodeOverlay"}


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("karpenter.sh/v1beta1", "NodePool"), ("karpenter.k8s.aws/v1beta1", "EC2NodeClass"), ("karpenter.sh/v1", "Foo")],
)
def test_unknown_api_version_or_kind_is_an_error(api_version: str, kind: str) -> None:
    errors = validate_custom_resource({**VALID_NODEPOOL, "apiVersion": api_version, "kind": kind})
    assert len(errors) == 1
    assert "no CRD" in errors[0]


# --- every CEL rule of the vendored CRDs ---------------------------------------------------------------

# `x-kubernetes-validations` rules per CRD file, counted in aws/karpenter-provider-aws pkg/apis/crds/ @ v1.14.1
# (../shared/schemas holds byte copies): the walker must find them all.
EXPECTED_RULE_COUNTS = {
    "karpenter.sh_nodepools.yaml": 20,
    "karpenter.k8s.aws_ec2nodeclasses.yaml": 54,
    "karpenter.sh_nodeclaims.yaml": 10,
    "karpenter.sh_nodeoverlays.yaml": 8,
    "autoscaling.x-k8s.io_capacitybuffers.yaml": 2,
}


@pytest.mark.parametrize("file_name", sorted(EXPECTED_RULE_COUNTS))
def test_every_cel_rule_compiles(file_name: str) -> None:
    path = require_schema_dir(KARPENTER_CRD_DIR) / file_name
    rules = [
        (where, rule["rule"]) for served in load_crd_file(path) for where, rule in iter_cel_rules(served.openapi_schema)
    ]
    assert len(rules) == EXPECTED_RULE_COUNTS[file_name]
    failures = []
    for where, rule in rules:
        try:
            compile_rule(rule)
        except ValueError as exc:
            failures.append(f"{where}: {rule!r}: {exc}")
    assert failures == []


def test_only_oldself_rules_are_skipped() -> None:
    rules = [rule["rule"] for served in load_crds().values() for _, rule in iter_cel_rules(served.openapi_schema)]
    skipped = [rule for rule in rules if is_transition_rule(rule)]
    assert skipped, "the NodePool/NodeClaim CRDs carry transition rules"
    assert all("oldSelf" in rule for rule in skipped)
    assert not any(is_transition_rule(rule) for rule in rules if "oldSelf" not in rule)


# --- structural defaults --------------------------------------------------------------------------------


def test_defaults_apply_before_validation_like_the_apiserver() -> None:
    nodepool = copy.deepcopy(VALID_NODEPOOL)
    del nodepool["spec"]["disruption"]
    schema = load_crds()[("karpenter.sh/v1", "NodePool")].openapi_schema
    defaulted = apply_structural_defaults(nodepool, schema)
    # `disruption` defaults to {consolidateAfter: 0s}; its own fields are then defaulted in turn.
    assert defaulted["spec"]["disruption"] == {
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"nodes": "10%"}],
    }
    assert "disruption" not in nodepool["spec"], "the input is not modified"
    assert validate_custom_resource(nodepool) == []


# --- the schema conversion (general: reused for the nodeadm NodeConfig CRD) -----------------------------


def test_conversion_rejects_unknown_fields_and_keeps_open_maps_open() -> None:
    schema = crd_to_jsonschema(
        {
            "type": "object",
            "properties": {
                "known": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {}}},
            },
        }
    )
    assert schema["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["labels"]["additionalProperties"]
    assert "additionalProperties" not in schema["properties"]["raw"], "preserve-unknown objects stay open"


def test_conversion_of_nullable_int_or_string_and_sets() -> None:
    schema = crd_to_jsonschema(
        {
            "type": "object",
            "properties": {
                "maybe": {"type": "string", "nullable": True},
                "quantity": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
            },
        }
    )
    properties = schema["properties"]
    assert properties["maybe"]["type"] == ["string", "null"]
    assert properties["quantity"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert properties["tags"]["uniqueItems"] is True


def test_preserve_unknown_as_any_accepts_raw_values() -> None:
    raw: dict[str, Any] = {
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "additionalProperties": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }
        },
    }
    literal = crd_to_jsonschema(raw)
    relaxed = crd_to_jsonschema(raw, preserve_unknown_as_any=True)
    assert literal["properties"]["config"]["additionalProperties"]["type"] == "object"
    assert "type" not in relaxed["properties"]["config"]["additionalProperties"]
    assert "type" in raw["properties"]["config"]["additionalProperties"], "the input is not modified"


def test_set_duplicates_are_rejected() -> None:
    nodepool = copy.deepcopy(VALID_NODEPOOL)
    nodepool["spec"]["disruption"]["budgets"][0]["reasons"] = ["Empty", "Empty"]
    errors = validate_custom_resource(nodepool)
    assert any("has non-unique elements" in error for error in errors), errors


# --- missing ../shared --------------------------------------------------------------------------------


def test_missing_schema_dir_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="is missing"):
        require_schema_dir(tmp_path / "absent")


def test_missing_schema_dir_skips_outside_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="is missing"):
        require_schema_dir(tmp_path / "absent")
