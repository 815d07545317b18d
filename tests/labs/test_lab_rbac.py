"""Lab members below the fences (issue 30): the rendered RBAC, evaluated by `tests/support/rbac_model.py`.

Every stack's manifests hold, per lab, a Role `lab-member` bound to the lab's group; the members' access
entries carry that group. By the model, a member can run and debug workloads in the lab, and can neither
change the lab's NetworkPolicies, quota or LimitRange nor grant itself more. The upstream `edit` role the
platform used before (`tests/support/rbac_edit_reference.py`) is evaluated side by side: docs/labs.md prints the table.
"""

from __future__ import annotations

import pytest

from components.facts.constants import ACCESS_ENTRY_MARKER_GROUP, EKS_RESERVED_GROUP_PREFIXES
from components.renderers.labs.lab_rbac import lab_group
from offline.plan import Plan
from tests.conftest import PROJECT_DIR, STACKS, SynthRun
from tests.support.rbac_edit_reference import edit_binding, edit_cluster_roles
from tests.support.rbac_model import RBAC_KINDS, Rbac, Request

ENTRY = "aws:eks/accessEntry:AccessEntry"

# (what a member does, the request): run and debug their own workloads.
TEACHING = [
    ("create a pod", Request("create", "", "pods")),
    ("read a pod's logs", Request("get", "", "pods", "log")),
    ("exec into a pod", Request("create", "", "pods", "exec")),
    ("exec (websocket upgrade)", Request("get", "", "pods", "exec")),
    ("port-forward", Request("create", "", "pods", "portforward")),
    ("create a Deployment", Request("create", "apps", "deployments")),
    ("create a Job", Request("create", "batch", "jobs")),
    ("create a ConfigMap", Request("create", "", "configmaps")),
    ("read a Secret", Request("get", "", "secrets")),
    ("create a Service", Request("create", "", "services")),
    ("create a PVC", Request("create", "", "persistentvolumeclaims")),
    ("read events", Request("list", "", "events")),
    ("read the quota", Request("get", "", "resourcequotas")),
]
# Lowering a fence, or taking more rights.
FENCES = [
    ("create a NetworkPolicy", Request("create", "networking.k8s.io", "networkpolicies")),
    ("delete a NetworkPolicy", Request("delete", "networking.k8s.io", "networkpolicies")),
    ("patch a NetworkPolicy", Request("patch", "networking.k8s.io", "networkpolicies")),
    ("NetworkPolicy (extensions)", Request("create", "extensions", "networkpolicies")),
    ("patch the ResourceQuota", Request("patch", "", "resourcequotas")),
    ("delete the ResourceQuota", Request("delete", "", "resourcequotas")),
    ("patch the LimitRange", Request("patch", "", "limitranges")),
    ("delete the LimitRange", Request("delete", "", "limitranges")),
    ("patch the namespace", Request("patch", "", "namespaces")),
    ("create a Role", Request("create", "rbac.authorization.k8s.io", "roles")),
    ("create a RoleBinding", Request("create", "rbac.authorization.k8s.io", "rolebindings")),
    ("bind a ClusterRole", Request("bind", "rbac.authorization.k8s.io", "clusterroles")),
    ("escalate a Role", Request("escalate", "rbac.authorization.k8s.io", "roles")),
    ("impersonate a service account", Request("impersonate", "", "serviceaccounts")),
    ("mint a service account token", Request("create", "", "serviceaccounts", "token")),
    ("create a PodDisruptionBudget", Request("create", "policy", "poddisruptionbudgets")),
    ("write Endpoints", Request("create", "", "endpoints")),
    ("create a DaemonSet", Request("create", "apps", "daemonsets")),
    ("create an Ingress", Request("create", "networking.k8s.io", "ingresses")),
]


def _rbac(plan: Plan) -> Rbac:
    return Rbac([obj for kind in RBAC_KINDS for obj in plan.objects(kind)])


def _in(request: Request, namespace: str, *groups: str) -> Request:
    return Request(request.verb, request.api_group, request.resource, request.subresource, namespace, groups=groups)


def _labs(plan: Plan) -> list[str]:
    return [
        ns["metadata"]["name"] for ns in plan.objects("Namespace") if "gpu-platform.io/lab" in ns["metadata"]["labels"]
    ]


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(("what", "request_"), TEACHING, ids=[what for what, _ in TEACHING])
def test_a_member_can_run_and_debug_workloads_in_the_lab(
    plans: dict[str, Plan], stack: str, what: str, request_: Request
) -> None:
    rbac = _rbac(plans[stack])
    for lab in _labs(plans[stack]):
        assert rbac.allows(_in(request_, lab, lab_group(lab))), (stack, lab, what)


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(("what", "request_"), FENCES, ids=[what for what, _ in FENCES])
def test_a_member_can_neither_lower_a_fence_nor_escalate(
    plans: dict[str, Plan], stack: str, what: str, request_: Request
) -> None:
    rbac = _rbac(plans[stack])
    for lab in _labs(plans[stack]):
        assert not rbac.allows(_in(request_, lab, lab_group(lab), ACCESS_ENTRY_MARKER_GROUP)), (stack, lab, what)


def test_a_member_has_no_rights_in_another_lab_or_cluster_wide(plans: dict[str, Plan]) -> None:
    rbac = _rbac(plans["prod"])
    first, second = _labs(plans["prod"])[:2]
    pod = Request("create", "", "pods")
    assert rbac.allows(_in(pod, first, lab_group(first)))
    assert not rbac.allows(_in(pod, second, lab_group(first)))
    assert not rbac.allows(_in(pod, "kube-system", lab_group(first)))
    assert not rbac.allows(_in(Request("list", "", "nodes"), "", lab_group(first)))
    # The marker group every entry carries is bound to nothing.
    assert not rbac.rules_for(_in(pod, first, ACCESS_ENTRY_MARKER_GROUP))


def test_the_model_reads_the_synth_manifests_folder(staging_synth: SynthRun, staging_plan: Plan) -> None:
    from_files = Rbac.from_manifests(staging_synth.out / "manifests")
    assert sorted(map(str, from_files.objects)) == sorted(map(str, _rbac(staging_plan).objects))
    (lab,) = _labs(staging_plan)
    assert from_files.allows(_in(Request("create", "", "pods", "exec"), lab, lab_group(lab)))


def test_the_former_edit_role_allowed_what_the_new_role_denies() -> None:
    """The transcribed `edit` (aggregated) did lower fences; the model sees it (so it is not vacuous)."""
    rbac = Rbac([*edit_cluster_roles(), edit_binding("lab", "g")])
    assert rbac.allows(_in(FENCES[0][1], "lab", "g"))  # create a NetworkPolicy
    assert rbac.allows(_in(Request("impersonate", "", "serviceaccounts"), "lab", "g"))
    assert not rbac.allows(_in(Request("patch", "", "resourcequotas"), "lab", "g"))
    for _, request in TEACHING:
        assert rbac.allows(_in(request, "lab", "g")), request


# --- the side-by-side table in docs/labs.md ----------------------------------------------------------------------


def side_by_side(plan: Plan) -> list[tuple[str, str, str]]:
    """(what, under `edit`, under `lab-member`) for every probe, as the docs table prints it."""
    lab = _labs(plan)[0]
    new = _rbac(plan)
    old = Rbac([*edit_cluster_roles(), edit_binding(lab, "former")])
    rows = []
    for what, request in [*TEACHING, *FENCES]:
        before = "yes" if old.allows(_in(request, lab, "former")) else "no"
        after = "yes" if new.allows(_in(request, lab, lab_group(lab))) else "no"
        rows.append((what, before, after))
    return rows


def test_docs_print_the_side_by_side_table_the_model_computes(staging_plan: Plan) -> None:
    text = (PROJECT_DIR / "docs" / "labs.md").read_text(encoding="utf-8")
    table = text.split("<!-- rbac-side-by-side -->", 2)[1]
    documented = [
        tuple(cell.strip().strip("`") for cell in line.strip().strip("|").split("|"))
        for line in table.strip().splitlines()[2:]
    ]
    assert documented == side_by_side(staging_plan)


# --- the access entries -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_every_entry_names_groups_eks_accepts_and_members_carry_their_labs(plans: dict[str, Plan], stack: str) -> None:
    bound = {s["name"] for b in plans[stack].objects("RoleBinding") for s in b["subjects"] if s["kind"] == "Group"}
    for entry in plans[stack].of_type(ENTRY):
        if entry["inputs"]["type"] != "STANDARD":
            continue
        groups = entry["inputs"]["kubernetesGroups"]
        # Never empty (an empty Optional+Computed set would keep the groups EKS holds), never reserved.
        assert groups[0] == ACCESS_ENTRY_MARKER_GROUP, entry["name"]
        assert not [g for g in groups if g.startswith(EKS_RESERVED_GROUP_PREFIXES)], groups
        assert set(groups[1:]) <= bound, groups
    assert not plans[stack].of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation") or all(
        "EditPolicy" not in a["inputs"]["policyArn"]
        for a in plans[stack].of_type("aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    )
