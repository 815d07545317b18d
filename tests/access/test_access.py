"""Cluster access (components/access.py): one EKS access entry per principal; admins and viewers by policy
associations, lab members by the Kubernetes groups on their entry (issue 30).

Issue 17: viewers (the PR preview role), the access matrix in the synth summary, and a principal moved
admin -> lab -> viewer keeping its entry's URN (three synths of altered staging configs, compared).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.access import ClusterAccess, ClusterAccessArgs
from components.facts.constants import ACCESS_ENTRY_MARKER_GROUP, CLUSTER_ADMIN_POLICY_ARN, CLUSTER_VIEW_POLICY_ARN
from components.renderers.access.access_entries import access_matrix, matrix_lines, principal_slug
from components.settings import SettingsError, StackSettings
from offline.mocks import Registration
from offline.plan import Plan
from offline.project_copy import copy_program
from offline.runner import install_mocks
from tests.conftest import PROJECT_DIR, STACKS, SynthRun, synthesize
from tests.support.settings import config_for, settings_for

ENTRY = "aws:eks/accessEntry:AccessEntry"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ADMIN = "arn:aws:iam::111122223333:role/platform-admin"
PREVIEW = "arn:aws:iam::111122223333:role/github-actions-preview"
INSTRUCTORS = "arn:aws:iam::111122223333:role/learning-lab-instructors"


def _entries(plan: Plan) -> dict[str, dict[str, Any]]:
    """principal ARN -> its access entry (every entry of the plan but Karpenter's node-role entry)."""
    return {e["inputs"]["principalArn"]: e for e in plan.of_type(ENTRY) if e["inputs"]["type"] == "STANDARD"}


def _associations(plan: Plan, principal: str) -> list[dict[str, Any]]:
    return [a for a in plan.of_type(ASSOCIATION) if a["inputs"]["principalArn"] == principal]


# --- viewers ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
def test_every_viewer_gets_an_entry_with_cluster_wide_view(plans: dict[str, Plan], stack: str) -> None:
    viewers = settings_for(stack).cluster.viewer_principal_arns
    assert viewers and viewers[0].endswith(":role/github-actions-preview")
    entries = _entries(plans[stack])
    for viewer in viewers:
        entry = entries[viewer]
        assert entry["name"] == f"access-{principal_slug(viewer)}"
        (association,) = _associations(plans[stack], viewer)
        assert association["inputs"]["policyArn"] == CLUSTER_VIEW_POLICY_ARN
        assert association["inputs"]["accessScope"] == {"type": "cluster"}
        assert entry["urn"] in association["dependencies"]


@pytest.mark.parametrize("stack", STACKS)
def test_one_entry_per_principal_except_the_creator(plans: dict[str, Plan], stack: str) -> None:
    settings = settings_for(stack)
    listed = {
        *settings.cluster.admin_principal_arns,
        *settings.cluster.viewer_principal_arns,
        *(member for lab in settings.labs for member in lab.members),
    }
    principals = [e["inputs"]["principalArn"] for e in plans[stack].of_type(ENTRY) if e["inputs"]["type"] == "STANDARD"]
    assert sorted(principals) == sorted(listed)
    assert settings.cluster.deployer_principal_arn not in principals
    assert "accessEntries" not in plans[stack].one("eks:index:Cluster", "cluster-eks")["inputs"]


def test_a_viewer_listed_as_admin_is_rejected_naming_both_key_paths() -> None:
    with pytest.raises(SettingsError) as caught:
        settings_for("staging", merge={"cluster": {"viewerPrincipalArns": [PREVIEW, ADMIN]}})
    ((path, message),) = caught.value.problems
    assert path == "gpu-platform:cluster.viewerPrincipalArns[1]"
    assert "gpu-platform:cluster.adminPrincipalArns[0]" in message


# --- the access matrix --------------------------------------------------------------------------------------------


def test_the_synth_summary_prints_the_access_matrix(staging_synth: SynthRun) -> None:
    block = staging_synth.stdout.split("Access matrix", 1)[1]
    # Written out by hand from Pulumi.staging.yaml: principal, then its access and the key that grants it.
    expected = [
        ("arn:aws:iam::111122223333:role/github-actions-deploy", "cluster admin", "gpu-platform:cluster.deployerPrincipalArn"),
        (PREVIEW, "cluster view", "gpu-platform:cluster.viewerPrincipalArns[0]"),
        (INSTRUCTORS, "group gpu-platform:lab:learning-lab", "gpu-platform:labs[0].members[0]"),
        (ADMIN, "cluster admin", "gpu-platform:cluster.adminPrincipalArns[0]"),
    ]  # fmt: skip
    lines = block.splitlines()
    for principal, access, key in expected:
        at = next(i for i, line in enumerate(lines) if line.strip().startswith(principal))
        grant = lines[at + 1]
        assert access in grant and grant.rstrip().endswith(key), grant
    assert "creator entry" in lines[next(i for i, line in enumerate(lines) if "github-actions-deploy" in line)]
    # The lab group's real verbs, from the rendered Role.
    assert "networking.k8s.io/networkpolicies: get, list, watch" in block
    assert "pods/exec, pods/attach, pods/portforward: get, create" in block


def test_a_viewer_in_a_lab_has_both_grants_on_one_entry() -> None:
    labs = json.loads(config_for("staging")["gpu-platform:labs"])
    labs[0]["members"].append(PREVIEW)
    settings = settings_for("staging", labs=labs)
    (preview,) = [a for a in access_matrix(settings.cluster, settings.labs) if a.principal == PREVIEW]
    assert [g.policy_arn for g in preview.grants] == [CLUSTER_VIEW_POLICY_ARN]
    assert [g.keys for g in preview.grants] == [("gpu-platform:cluster.viewerPrincipalArns[0]",)]
    assert [g.keys for g in preview.group_grants] == [("gpu-platform:labs[0].members[1]",)]
    assert preview.kubernetes_groups == [ACCESS_ENTRY_MARKER_GROUP, "gpu-platform:lab:learning-lab"]
    assert sum(1 for line in matrix_lines(settings.cluster, settings.labs) if line.strip().startswith(PREVIEW)) == 1


# --- the component under mocks ------------------------------------------------------------------------------------


def _record(settings: StackSettings) -> list[Registration]:
    monitor = install_mocks("gpu-platform", "test", settings.region, {}, [])

    @pulumi.runtime.test
    def run() -> None:
        ClusterAccess("access", ClusterAccessArgs(settings=settings, eks_cluster_name="test-cluster"))

    try:
        run()
    finally:
        pulumi.runtime.settings.reset_options()
    return list(monitor.registrations)


def test_associations_replace_delete_first_and_entries_alias_their_former_urns() -> None:
    registrations = _record(settings_for("prod"))
    associations = [r for r in registrations if r.type == ASSOCIATION]
    assert associations and all(r.delete_before_replace for r in associations)
    entries = {r.inputs["principalArn"]: r for r in registrations if r.type == ENTRY}
    for principal, entry in entries.items():
        slug = principal_slug(principal)
        assert entry.name == f"access-{slug}" and entry.inputs["clusterName"] == "test-cluster"
        assert not entry.delete_before_replace
        # Where earlier versions kept the same entry: inside pulumi-eks's Cluster (admins) or the labs component.
        assert entry.aliases == sorted(
            [
                f"urn:pulumi:test::gpu-platform::gpu-platform:cluster:Cluster$eks:index:Cluster${ENTRY}::cluster-eks-{slug}",
                f"urn:pulumi:test::gpu-platform::gpu-platform:labs:Labs${ENTRY}::labs-member-{slug}",
            ]
        )
    admin = next(r for r in associations if r.inputs["policyArn"] == CLUSTER_ADMIN_POLICY_ARN)
    assert admin.aliases == [
        "urn:pulumi:test::gpu-platform::gpu-platform:cluster:Cluster$eks:index:Cluster"
        f"${ENTRY}${ASSOCIATION}::cluster-eks-{principal_slug(admin.inputs['principalArn'])}-cluster-admin"
    ]


# --- moving a principal admin -> lab -> viewer ----------------------------------------------------------------


def _staging_with(project: Path, role: str) -> None:
    """Staging with platform-admin as an admin, a member of the learning lab, or a viewer."""
    stack_file = yaml.safe_load((PROJECT_DIR / "Pulumi.staging.yaml").read_text(encoding="utf-8"))
    config = stack_file["config"]
    cluster, lab = config["gpu-platform:cluster"], config["gpu-platform:labs"][0]
    cluster["adminPrincipalArns"] = [ADMIN] if role == "admin" else []
    cluster["viewerPrincipalArns"] = [PREVIEW, *([ADMIN] if role == "viewer" else [])]
    lab["members"] = [INSTRUCTORS, *([ADMIN] if role == "lab" else [])]
    (project / "Pulumi.staging.yaml").write_text(yaml.safe_dump(stack_file, sort_keys=False), encoding="utf-8")


@pytest.fixture(scope="module")
def moved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The synth of each step: platform-admin as admin, then lab member, then viewer."""
    out: dict[str, Path] = {}
    for role in ("admin", "lab", "viewer"):
        project = copy_program(tmp_path_factory.mktemp(f"as-{role}"))
        _staging_with(project, role)
        synthesize("staging", project / "out", project)
        out[role] = project / "out"
    return out


def test_moving_a_principal_keeps_its_entry_urn_and_changes_associations_and_groups(moved: dict[str, Path]) -> None:
    plans = {role: Plan.load(path) for role, path in moved.items()}
    urns = {role: _entries(plan)[ADMIN]["urn"] for role, plan in plans.items()}
    assert len(set(urns.values())) == 1, urns
    policies = {role: [a["inputs"]["policyArn"] for a in _associations(plan, ADMIN)] for role, plan in plans.items()}
    assert policies == {"admin": [CLUSTER_ADMIN_POLICY_ARN], "lab": [], "viewer": [CLUSTER_VIEW_POLICY_ARN]}
    groups = {role: _entries(plan)[ADMIN]["inputs"]["kubernetesGroups"] for role, plan in plans.items()}
    assert groups == {
        "admin": [ACCESS_ENTRY_MARKER_GROUP],
        "lab": [ACCESS_ENTRY_MARKER_GROUP, "gpu-platform:lab:learning-lab"],
        "viewer": [ACCESS_ENTRY_MARKER_GROUP],
    }


@pytest.mark.parametrize(("old", "new"), [("admin", "lab"), ("lab", "viewer"), ("viewer", "admin")])
def test_offline_diff_finds_no_collision_in_each_move(moved: dict[str, Path], old: str, new: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "offline.diff", str(moved[old]), str(moved[new])],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "**0 collision(s)**" in result.stdout
    slug = principal_slug(ADMIN)
    # The association of the old role is removed or added; the entry stays, its groups change in place.
    assert f"AccessPolicyAssociation::access-{slug}-" in result.stdout
    entry_lines = [line for line in result.stdout.splitlines() if f"AccessEntry::access-{slug}`" in line]
    # Never added or removed: at most changed in place (its groups), never through an alias.
    assert all("kubernetesGroups" in line and "(was" not in line for line in entry_lines), entry_lines
    if "lab" in (old, new):
        assert entry_lines, result.stdout
        assert (
            "gpu-platform:lab:learning-lab" in result.stdout and "RoleBinding learning-lab/lab-member" in result.stdout
        )
