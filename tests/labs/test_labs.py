"""Learning labs: config rules, the per-lab Kubernetes objects, members' EKS access, capacity math."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from components.facts.constants import DEMO_POD_REQUESTS, GPU_ENABLED_NAMESPACE_LABEL, GPU_RESOURCE
from components.renderers.access.access_entries import access_matrix, principal_slug
from components.renderers.labs.demo_manifests import demo_deployment
from components.renderers.labs.lab_manifests import (
    lab_objects,
)
from components.settings import (
    RESERVED_NAMESPACES,
    ClusterSettings,
    LabSettings,
    SettingsError,
    StackSettings,
    load_settings,
)
from components.settings.checks.fit_placement import group_fits
from offline.cost import stack_forecast
from offline.plan import Plan
from offline.summary import render_summary
from tests.conftest import STACKS
from tests.support.k8s_validation import validate_core_object
from tests.support.settings import settings_for

ADMIN = "arn:aws:iam::111122223333:role/platform-admin"
MEMBER = "arn:aws:iam::111122223333:role/student"


def _with_labs(base: dict[str, str], labs: list[dict[str, Any]], **overrides: Any) -> dict[str, str]:
    config = {**base, "gpu-platform:labs": json.dumps(labs)}
    for key, value in overrides.items():
        config[f"gpu-platform:{key}"] = json.dumps(value)
    return config


def _problems(config: dict[str, str]) -> list[tuple[str, str]]:
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    return caught.value.problems


@pytest.fixture(scope="module")
def staging_config(stack_configs: dict[str, dict[str, str]]) -> dict[str, str]:
    return stack_configs["staging"]


@pytest.fixture(scope="module")
def settings() -> dict[str, StackSettings]:
    return {stack: settings_for(stack) for stack in STACKS}


# --- config -----------------------------------------------------------------------------------------

DEMO_LAB = {"name": "learning-lab", "gpuSlots": 3}
# (labs, expected key path, fragment of the message)
BAD_LABS: list[tuple[list[dict[str, Any]], str, str]] = [
    ([DEMO_LAB, {"name": "Lab_1", "gpuSlots": 1}], "gpu-platform:labs[1].name", "DNS label"),
    ([DEMO_LAB, {"name": "kube-system", "gpuSlots": 1}], "gpu-platform:labs[1].name", "system namespace"),
    ([DEMO_LAB, {"name": "default", "gpuSlots": 1}], "gpu-platform:labs[1].name", "system namespace"),
    ([DEMO_LAB, {"name": "amazon-cloudwatch", "gpuSlots": 1}], "gpu-platform:labs[1].name", "system namespace"),
    ([DEMO_LAB, {"name": "kube-lab", "gpuSlots": 1}], "gpu-platform:labs[1].name", "'kube-' name"),
    ([DEMO_LAB, {"name": "a", "gpuSlots": 0}], "gpu-platform:labs[1].gpuSlots", "must be between 1 and 10000 (got 0)"),
    ([DEMO_LAB, {"name": "a"}], "gpu-platform:labs[1].gpuSlots", "required"),
    ([DEMO_LAB, {"name": "a", "gpuSlots": 1, "members": ["bob"]}], "gpu-platform:labs[1].members[0]", "IAM role or user ARN"),
    ([DEMO_LAB, {"name": "a", "gpuSlots": 1, "members": [MEMBER, MEMBER]}], "gpu-platform:labs[1].members", "each principal once"),
    ([DEMO_LAB, {"name": "a", "gpuSlots": 1, "cpu": "lots"}], "gpu-platform:labs[1].cpu", "'lots' is not a Kubernetes quantity"),
    ([DEMO_LAB, {"name": "a", "gpuSlots": 1, "memory": "64GB"}], "gpu-platform:labs[1].memory", "'64GB' is not a Kubernetes quantity"),
    ([DEMO_LAB, {"name": "a", "gpuSlots": 1, "quota": 1}], "gpu-platform:labs[1].quota", "unknown key"),
    ([DEMO_LAB, {"name": "learning-lab", "gpuSlots": 1}], "gpu-platform:labs", "names must be unique"),
    ([DEMO_LAB, {"name": "a", "gpuSlots": 1, "members": [ADMIN]}], "gpu-platform:labs[1].members[0]", "gpu-platform:cluster.adminPrincipalArns[0]"),
    ([{"name": "other-lab", "gpuSlots": 3}], "gpu-platform:demo.namespace", "must be one of the labs"),
    ([{"name": "learning-lab", "gpuSlots": 2}], "gpu-platform:demo.replicas", "gpuSlots 2"),
]  # fmt: skip


@pytest.mark.parametrize(("labs", "path", "fragment"), BAD_LABS, ids=[f"{c[1]}:{c[2]}" for c in BAD_LABS])
def test_bad_lab_names_its_key(staging_config: dict[str, str], labs: list[Any], path: str, fragment: str) -> None:
    problems = _problems(_with_labs(staging_config, labs))
    assert any(p == path and fragment in message for p, message in problems), problems


def test_good_labs_load(staging_config: dict[str, str]) -> None:
    labs = [DEMO_LAB, {"name": "nlp-lab", "gpuSlots": 2, "members": [MEMBER], "cpu": "500m", "memory": "8Gi"}]
    loaded = load_settings(_with_labs(staging_config, labs)).labs
    assert [(lab.name, lab.gpu_slots, lab.cpu, lab.memory) for lab in loaded] == [
        ("learning-lab", 3, "16", "64Gi"),
        ("nlp-lab", 2, "500m", "8Gi"),
    ]


def test_every_system_namespace_is_reserved() -> None:
    assert RESERVED_NAMESPACES == (
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "amazon-cloudwatch",
        "lab-timetable",
    )


def test_stacks_configure_labs(settings: dict[str, StackSettings]) -> None:
    staging, prod = settings["staging"], settings["prod"]
    assert [lab.name for lab in staging.labs] == [staging.demo.namespace] and staging.demo.enabled
    assert len(prod.labs) == 2 and not prod.demo.enabled


# --- Kubernetes objects -----------------------------------------------------------------------------

LAB = LabSettings(name="vision-lab", gpu_slots=7, cpu="8", memory="32Gi")


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_lab_objects_are_strict_valid(version: str) -> None:
    objects = lab_objects(LAB, version)
    assert [obj["kind"] for obj in objects] == [
        "Namespace",
        "ResourceQuota",
        "LimitRange",
        "NetworkPolicy",
        "NetworkPolicy",
    ]
    for obj in objects:
        assert validate_core_object(obj, version) == [], obj["kind"]


def test_namespace_is_restricted_and_gpu_enabled() -> None:
    labels = lab_objects(LAB, "1.35")[0]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["pod-security.kubernetes.io/enforce-version"] == "v1.35"
    assert labels[GPU_ENABLED_NAMESPACE_LABEL] == "true"


def test_quota_holds_the_lab_to_its_slots_cpu_and_memory() -> None:
    quota = lab_objects(LAB, "1.35")[1]
    assert quota["spec"]["hard"] == {
        f"requests.{GPU_RESOURCE}": "7",
        "requests.cpu": "8",
        "requests.memory": "32Gi",
    }


def test_limit_range_defaults_every_quota_dimension() -> None:
    quota, limit_range = lab_objects(LAB, "1.35")[1:3]
    (limits,) = limit_range["spec"]["limits"]
    assert limits["type"] == "Container"
    defaults = {f"requests.{k}" for k in limits["defaultRequest"]}
    assert "default" not in limits  # a default limit below a container's own request gets the pod refused
    # nvidia.com/gpu needs no default: a pod that requests none uses none of the quota.
    assert set(quota["spec"]["hard"]) - {f"requests.{GPU_RESOURCE}"} <= defaults


def limit_ranger_defaults(limit_range: dict[str, Any], resources: dict[str, dict[str, str]]) -> dict[str, Any]:
    """What LimitRanger admits for one container: its own requests/limits, the Container defaults filling the
    gaps (kubernetes plugin/pkg/admission/limitranger: `default` fills limits, `defaultRequest` fills requests)."""
    (item,) = limit_range["spec"]["limits"]
    return {
        "requests": {**item.get("defaultRequest", {}), **resources.get("requests", {})},
        "limits": {**item.get("default", {}), **resources.get("limits", {})},
    }


@pytest.mark.parametrize(
    "resources",
    [{}, {"requests": {"memory": "4Gi"}}, {"requests": {"cpu": "2", "memory": "24Gi"}}, {"limits": {"memory": "8Gi"}}],
    ids=["nothing", "4Gi request", "24Gi request", "limit only"],
)
def test_a_container_without_a_limit_is_not_refused_by_a_default_below_its_request(
    resources: dict[str, dict[str, str]],
) -> None:
    """The API refuses a container whose request exceeds its limit: a default limit must never undercut a request."""
    limit_range = lab_objects(LAB, "1.35")[2]
    admitted = limit_ranger_defaults(limit_range, resources)
    for name, limit in admitted["limits"].items():
        request = admitted["requests"].get(name)
        assert request is None or _quantity(request) <= _quantity(limit), (name, request, limit)
    assert admitted["requests"]["memory"] and admitted["requests"]["cpu"]  # every quota dimension is filled


def test_network_policies_keep_other_labs_out_and_allow_dns_and_https() -> None:
    ingress, egress = lab_objects(LAB, "1.35")[3:]
    assert ingress["spec"]["podSelector"] == {} and ingress["spec"]["policyTypes"] == ["Ingress"]
    # A peer with only a podSelector means "pods of this namespace": no namespaceSelector, no ipBlock.
    assert ingress["spec"]["ingress"] == [{"from": [{"podSelector": {}}]}]
    assert egress["spec"]["policyTypes"] == ["Egress"]
    ports = {(p["protocol"], p["port"]) for rule in egress["spec"]["egress"] for p in rule.get("ports", [])}
    assert ports == {("UDP", 53), ("TCP", 53), ("TCP", 443)}
    for rule in egress["spec"]["egress"]:
        assert "ports" in rule or rule["to"] == [{"podSelector": {}}], rule


def _groups_by_member(labs: list[LabSettings]) -> dict[str, list[str]]:
    cluster = ClusterSettings()
    return {a.principal: [g.group for g in a.group_grants] for a in access_matrix(cluster, labs) if a.group_grants}


def test_a_member_of_two_labs_gets_one_entry_with_both_groups() -> None:
    labs = [
        LabSettings(name="b-lab", gpu_slots=1, members=[MEMBER]),
        LabSettings(name="a-lab", gpu_slots=1, members=[MEMBER, ADMIN]),
    ]
    assert _groups_by_member(labs) == {
        ADMIN: ["gpu-platform:lab:a-lab"],
        MEMBER: ["gpu-platform:lab:a-lab", "gpu-platform:lab:b-lab"],
    }


# --- plans ------------------------------------------------------------------------------------------


def test_plans_hold_every_lab(plans: dict[str, Plan], settings: dict[str, StackSettings]) -> None:
    for stack, plan in plans.items():
        stack_settings = settings[stack]
        for lab in stack_settings.labs:
            for obj in lab_objects(lab, stack_settings.kubernetes_version):
                assert obj in plan.objects(obj["kind"]), (stack, obj["kind"], lab.name)


def test_members_carry_their_labs_groups_and_each_lab_binds_its_group(
    plans: dict[str, Plan], settings: dict[str, StackSettings]
) -> None:
    for stack, plan in plans.items():
        labs = list(settings[stack].labs)
        (access,) = plan.of_type("gpu-platform:access:ClusterAccess")
        entries = {
            e["inputs"]["principalArn"]: e
            for e in plan.of_type("aws:eks/accessEntry:AccessEntry")
            if e["parent"] == access["urn"]
        }
        for lab in labs:
            for member in lab.members:
                entry = entries[member]
                assert f"gpu-platform:lab:{lab.name}" in entry["inputs"]["kubernetesGroups"], (stack, member)
                assert principal_slug(member) in entry["name"]
            in_lab = [b for b in plan.objects("RoleBinding") if b["metadata"]["namespace"] == lab.name]
            group = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"gpu-platform:lab:{lab.name}"}
            # Only the members' binding names the lab's group (the hub and its reaper bind their service accounts).
            (binding,) = [b for b in in_lab if group in b["subjects"]]
            assert binding["subjects"] == [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": f"gpu-platform:lab:{lab.name}"}
            ]
            assert binding["roleRef"]["kind"] == "Role" and binding["roleRef"]["name"] == "lab-member"
        assert not [
            a
            for a in plan.of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
            if "Edit" in a["inputs"]["policyArn"]
        ], stack


def test_prod_shares_one_member_between_its_labs(settings: dict[str, StackSettings]) -> None:
    assert any(len(groups) == 2 for groups in _groups_by_member(list(settings["prod"].labs)).values())


# --- capacity -----------------------------------------------------------------------------------------


def test_max_slots_sum_pools_and_the_managed_group(
    settings: dict[str, StackSettings], managed_group_config: dict[str, str]
) -> None:
    # Staging: Karpenter g4-nodepool gpuLimit 8 x 3 replicas (no managed GPU group).
    assert settings["staging"].resolved.max_slots == 8 * 3
    # Prod: t4-shared 16 x 3; a10g-inference 16 x 4; l4-slice 8 g6f slices x 1 (no managed GPU group).
    assert settings["prod"].resolved.max_slots == 16 * 3 + 16 * 4 + 8 * 1
    # With staging's managed group on: + maxSize 1 x 1 T4 x 3 replicas.
    assert load_settings(managed_group_config).resolved.max_slots == 1 * 1 * 3 + 8 * 3


def test_labs_within_capacity_get_no_warning(settings: dict[str, StackSettings]) -> None:
    for stack_settings in settings.values():
        assert stack_settings.resolved.lab_slot_warning is None


def test_labs_beyond_capacity_are_warned_in_the_summary(staging_config: dict[str, str], staging_plan: Plan) -> None:
    over = load_settings(_with_labs(staging_config, [DEMO_LAB, {"name": "big-lab", "gpuSlots": 25}]))
    warning = over.resolved.lab_slot_warning
    assert warning is not None and "28" in warning and "at most 24" in warning
    summary = render_summary(over, staging_plan, "staging", Path("/tmp/out"), stack_forecast(over), group_fits(over))
    assert warning in summary
    assert re.search(r"big-lab\s+25\s+0", summary)


def test_lab_objects_wait_for_their_namespace(plans: dict[str, Plan]) -> None:
    for stack, plan in plans.items():
        (labs,) = plan.of_type("gpu-platform:labs:Labs")
        children = [r for r in plan.resources if r["parent"] == labs["urn"] and r["type"].startswith("kubernetes:")]
        namespaces = {r["inputs"]["metadata"]["name"]: r["urn"] for r in children if r["type"].endswith(":Namespace")}
        assert namespaces, stack
        for resource in children:
            namespace = resource["inputs"]["metadata"].get("namespace")
            if namespace is not None:
                assert namespaces[namespace] in resource["dependencies"], resource["name"]


_UNITS = {"": 1, "m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def _quantity(text: str) -> float:
    number, unit = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS[unit]


def test_the_demo_fits_its_labs_quota(settings: dict[str, StackSettings]) -> None:
    staging = settings["staging"]
    (lab,) = [lab for lab in staging.labs if lab.name == staging.demo.namespace]
    hard = lab_objects(lab, staging.kubernetes_version)[1]["spec"]["hard"]
    (container,) = demo_deployment(staging.demo)["spec"]["template"]["spec"]["containers"]
    used = {
        f"requests.{GPU_RESOURCE}": container["resources"]["limits"][GPU_RESOURCE],
        "requests.cpu": container["resources"]["requests"]["cpu"],
        "requests.memory": container["resources"]["requests"]["memory"],
    }
    assert set(used) == set(hard)
    for key, per_pod in used.items():
        assert _quantity(per_pod) * staging.demo.replicas <= _quantity(hard[key]), key


# --- issue 17: the demo fits its lab's quota; decimal quantities are quantities ----------------------------------


@pytest.mark.parametrize(
    ("resource", "quota"),
    [("memory", "2Gi"), ("memory", "3G"), ("cpu", "500m"), ("cpu", "0.7")],
)
def test_a_lab_whose_quota_cannot_fit_the_demo_is_rejected(
    staging_config: dict[str, str], resource: str, quota: str
) -> None:
    """Staging's demo runs 3 pods of 250m / 1Gi requests in its lab: 750m and 3Gi (3221225472 bytes) are needed.
    The demo skips await, so a quota too small would refuse its pods silently."""
    lab = {**DEMO_LAB, "gpuSlots": 6, resource: quota}
    ((path, message),) = _problems(_with_labs(staging_config, [lab]))
    assert path == "gpu-platform:demo.replicas"
    assert f"gpu-platform:labs[0].{resource}: {quota}" in message and f"3 x {DEMO_POD_REQUESTS[resource]}" in message


@pytest.mark.parametrize(("cpu", "memory"), [("750m", "3Gi"), ("1", "3221225472"), ("0.75", "4G")])
def test_a_lab_that_exactly_or_amply_fits_the_demo_loads(staging_config: dict[str, str], cpu: str, memory: str) -> None:
    lab = {**DEMO_LAB, "gpuSlots": 6, "cpu": cpu, "memory": memory}
    assert load_settings(_with_labs(staging_config, [lab])).labs[0].memory == memory


@pytest.mark.parametrize("memory", ["64G", "64000M", "6.4e10", "64Gi", "1E"])
def test_decimal_suffixes_and_exponents_are_quantities(staging_config: dict[str, str], memory: str) -> None:
    lab = {**DEMO_LAB, "gpuSlots": 6, "memory": memory}
    assert load_settings(_with_labs(staging_config, [lab])).labs[0].memory == memory
