"""The delivery workflows: linted by zizmor (offline) and GitHub's workflow schema, plus the promises they
make about this project checked directly (pinned actions, OIDC only, one preview per stack, staging before
prod, the policy pack everywhere Pulumi runs).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.renderers.access.access_entries import access_matrix
from offline.config_files import read_stack_config
from tests.conftest import PROJECT_DIR, STACKS
from tests.support.settings import settings_for

WORKFLOWS_DIR = PROJECT_DIR / ".github" / "workflows"
WORKFLOWS = sorted(WORKFLOWS_DIR.glob("*.yml"))
BIN = Path(sys.executable).parent
PINNED_USES = re.compile(r"^\s*(?:-\s+)?uses:\s+([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+(\.\d+)*\s*$")
LOCAL_USES = re.compile(r"^\s*(?:-\s+)?uses:\s+\$/")
PULUMI_ACTION = "pulumi/actions"
AWS_CREDENTIALS_ACTION = "aws-actions/configure-aws-credentials"
OIDC_ACTIONS = (AWS_CREDENTIALS_ACTION, "pulumi/auth-actions")


def _load(path: Path) -> dict[Any, Any]:
    return _load_text(path.read_text(encoding="utf-8"))


def _load_text(text: str) -> dict[Any, Any]:
    data = yaml.safe_load(text)
    # PyYAML reads the bare key `on` as the boolean True (YAML 1.1).
    return {("on" if key is True else key): value for key, value in data.items()}


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("steps", []))


def _action(step: dict[str, Any]) -> str:
    return str(step.get("uses", "")).split("@", 1)[0]


def _pulumi_steps(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    return [
        (name, job, step)
        for name, job in workflow["jobs"].items()
        for step in _steps(job)
        if _action(step) == PULUMI_ACTION
    ]


def _requirement_pin(package: str) -> str:
    pins = dict(
        line.split("==", 1) for line in (PROJECT_DIR / "requirements.txt").read_text().splitlines() if "==" in line
    )
    return pins[package].strip()


@pytest.fixture(scope="module")
def workflows() -> dict[str, dict[str, Any]]:
    return {path.stem: _load(path) for path in WORKFLOWS}


def test_the_three_workflows_exist(workflows: dict[str, dict[str, Any]]) -> None:
    assert set(workflows) == {"ci", "preview", "deploy"}


# --- linters -----------------------------------------------------------------------------------------------


def test_zizmor_finds_nothing() -> None:
    """Offline audits (no GitHub API); every persona's findings, no ignores configured."""
    result = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--persona", "pedantic", "--no-progress", str(WORKFLOWS_DIR)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout


def test_zizmor_catches_an_unpinned_action(tmp_path: Path) -> None:
    broken = (WORKFLOWS_DIR / "ci.yml").read_text(encoding="utf-8")
    broken = re.sub(r"actions/checkout@[0-9a-f]{40} # v[\d.]+", "actions/checkout@v5", broken, count=1)
    (tmp_path / "ci.yml").write_text(broken, encoding="utf-8")
    result = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--no-progress", str(tmp_path / "ci.yml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0 and "unpinned-uses" in result.stdout, result.stdout


def test_github_workflow_schema() -> None:
    result = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


# --- supply chain and credentials -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_actions_are_pinned_by_commit_sha_with_their_version(path: Path) -> None:
    uses_lines = [line for line in path.read_text(encoding="utf-8").splitlines() if re.match(r"^\s*(-\s+)?uses:", line)]
    assert uses_lines
    unpinned = [line.strip() for line in uses_lines if not (PINNED_USES.match(line) or LOCAL_USES.match(line))]
    assert unpinned == [], "pin by full commit SHA with a `# vX.Y.Z` comment"


def test_each_action_has_one_pin_everywhere() -> None:
    """One reviewed SHA per action across all workflows (a bump changes every use at once)."""
    pins: dict[str, set[str]] = {}
    for path in WORKFLOWS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if match := PINNED_USES.match(line):
                pins.setdefault(match.group(1), set()).add(match.group(2))
    assert {action: shas for action, shas in pins.items() if len(shas) > 1} == {}


def test_checkouts_do_not_persist_credentials(workflows: dict[str, dict[str, Any]]) -> None:
    for name, workflow in workflows.items():
        for job_name, job in workflow["jobs"].items():
            for step in _steps(job):
                if _action(step) == "actions/checkout":
                    assert step.get("with", {}).get("persist-credentials") is False, f"{name}/{job_name}"


def test_permissions_are_minimal(workflows: dict[str, dict[str, Any]]) -> None:
    """Nothing at the top; per job read-only, plus id-token for OIDC and pull-requests for the PR comment."""
    for name, workflow in workflows.items():
        assert workflow.get("permissions") == {}, f"{name}: grant nothing at the top, per job instead"
        for job_name, job in workflow["jobs"].items():
            granted = job.get("permissions")
            assert isinstance(granted, dict), f"{name}/{job_name}: declare the job's permissions"
            steps = _steps(job)
            needs_write = {
                "id-token": any(_action(step) in OIDC_ACTIONS for step in steps),
                "pull-requests": any(step.get("with", {}).get("comment-on-pr") is True for step in steps),
            }
            writes = {scope for scope, level in granted.items() if level == "write"}
            assert writes == {scope for scope, needed in needs_write.items() if needed}, f"{name}/{job_name}"


def test_no_long_lived_cloud_credentials(workflows: dict[str, dict[str, Any]]) -> None:
    text = "\n".join(path.read_text(encoding="utf-8") for path in WORKFLOWS)
    for forbidden in ("aws-access-key-id", "aws-secret-access-key", "AWS_SECRET_ACCESS_KEY", "PULUMI_ACCESS_TOKEN"):
        assert forbidden not in text
    # Every assumed role comes from a variable naming a role (assumed_roles asserts the `${{ vars.X }}` form).
    assert {r.variable for w in workflows.values() for r in assumed_roles(w)} <= set(ROLE_KEYS)


def test_every_workflow_limits_concurrency(workflows: dict[str, dict[str, Any]]) -> None:
    for name, workflow in workflows.items():
        groups = [workflow.get("concurrency")] + [job.get("concurrency") for job in workflow["jobs"].values()]
        assert any(groups), f"{name}: no concurrency group"
    assert workflows["deploy"]["concurrency"]["cancel-in-progress"] is False  # never cancel a running `up`


# --- what each workflow does ------------------------------------------------------------------------------------


def test_ci_runs_the_readme_test_command_on_pull_requests(workflows: dict[str, dict[str, Any]]) -> None:
    ci = workflows["ci"]
    assert "pull_request" in ci["on"] and "workflow_call" in ci["on"]
    commands = [step.get("run", "") for job in ci["jobs"].values() for step in _steps(job)]
    assert ".ci/run" in commands
    assert "README command 2" in (PROJECT_DIR / ".ci" / "run").read_text(encoding="utf-8")


def test_preview_covers_every_stack_with_its_region(workflows: dict[str, dict[str, Any]]) -> None:
    preview = workflows["preview"]
    assert list(preview["on"]) == ["pull_request"]
    (job,) = preview["jobs"].values()
    matrix = job["strategy"]["matrix"]["include"]
    regions = {stack: read_stack_config(PROJECT_DIR, stack).values["aws:region"] for stack in STACKS}
    assert {entry["stack"]: entry["region"] for entry in matrix} == regions
    ((_, _, step),) = _pulumi_steps(preview)
    assert step["with"]["command"] == "preview"
    assert step["with"]["comment-on-pr"] is True
    assert "${{ matrix.stack }}" in step["with"]["stack-name"]


def test_deploy_goes_staging_then_prod_behind_environments(workflows: dict[str, dict[str, Any]]) -> None:
    deploy = workflows["deploy"]
    assert deploy["on"] == {"push": {"branches": ["main"]}}
    jobs = deploy["jobs"]
    assert jobs["test"]["uses"] == "$/.github/workflows/ci.yml"
    assert (jobs["staging"]["needs"], jobs["prod"]["needs"]) == ("test", "staging")
    regions = {stack: read_stack_config(PROJECT_DIR, stack).values["aws:region"] for stack in STACKS}
    for stack in STACKS:
        job = jobs[stack]
        assert job["environment"] == stack
        (step,) = [s for s in _steps(job) if _action(s) == PULUMI_ACTION]
        assert step["with"]["command"] == "up"
        assert step["with"]["stack-name"].endswith(f"/gpu-platform/{stack}")
        (aws,) = [s for s in _steps(job) if _action(s) == AWS_CREDENTIALS_ACTION]
        assert aws["with"]["aws-region"] == regions[stack]


def test_pulumi_runs_with_the_policy_pack_and_the_pinned_cli(workflows: dict[str, dict[str, Any]]) -> None:
    steps = [step for name in ("preview", "deploy") for _, _, step in _pulumi_steps(workflows[name])]
    assert len(steps) == 1 + len(STACKS)
    assert (PROJECT_DIR / "policy" / "PulumiPolicy.yaml").is_file()
    for step in steps:
        assert step["with"]["policyPacks"] == "policy"
        assert step["with"]["pulumi-version"] == _requirement_pin("pulumi")


# --- issue 17: workflows that work from an empty account ---------------------------------------------------------

# The repository variable holding each role a workflow assumes -> the stack key whose principal is that role (and so
# gets its EKS access entry). docs/lifecycle.md "Runner" says the same; a new role variable must be added here.
ROLE_KEYS = {
    "AWS_DEPLOY_ROLE_ARN": "gpu-platform:cluster.deployerPrincipalArn",
    "AWS_PREVIEW_ROLE_ARN_STAGING": "gpu-platform:cluster.viewerPrincipalArns",
    "AWS_PREVIEW_ROLE_ARN_PROD": "gpu-platform:cluster.viewerPrincipalArns",
}
# What each pulumi command needs from the cluster: `up` creates and changes everything (the creator entry is
# cluster admin), `preview --refresh` reads every Kubernetes resource (cluster-wide view is enough).
ACCESS_NEEDED = {"up": {"cluster admin"}, "preview": {"cluster admin", "cluster view"}}
VARIABLE = re.compile(r"\$\{\{[^}]*?\b(vars|secrets)\.([A-Za-z_][A-Za-z0-9_]*)")


def test_every_pulumi_step_creates_a_missing_stack(workflows: dict[str, dict[str, Any]]) -> None:
    """pulumi/actions v7.0.0 selects an existing stack unless `upsert: true` (src/main.ts; action.yml default
    'false'): without it a first deploy or a new stack's first preview fails."""
    steps = [step for workflow in workflows.values() for _, _, step in _pulumi_steps(workflow)]
    assert steps
    for step in steps:
        if step["with"]["command"] in ("up", "preview"):
            assert step["with"].get("upsert") is True, step["name"]


@dataclass(frozen=True)
class AssumedRole:
    """One stack's AWS role in one job: the variable naming it and where that variable lives (an environment's
    variables shadow the repository's, so `(scope, variable)` is what a run reads)."""

    stack: str
    scope: str
    variable: str
    command: str


def _matrix_entries(job: dict[str, Any]) -> list[dict[str, Any]]:
    return list(job.get("strategy", {}).get("matrix", {}).get("include", [{}]))


def assumed_roles(workflow: dict[str, Any]) -> list[AssumedRole]:
    """Every (stack, role variable) a workflow's Pulumi jobs assume, resolving `${{ matrix.K }}` per entry."""
    roles = []
    for _, job, step in _pulumi_steps(workflow):
        (aws,) = [s for s in _steps(job) if _action(s) == AWS_CREDENTIALS_ACTION]
        for entry in _matrix_entries(job):
            role = str(aws["with"]["role-to-assume"])
            if matrix_key := re.fullmatch(r"\$\{\{ matrix\.([\w-]+) \}\}", role):
                role = str(entry[matrix_key.group(1)])
            match = re.fullmatch(r"\$\{\{ vars\.(\w+) \}\}", role)
            assert match, f"role-to-assume must name one repository or environment variable: {role}"
            stack = str(step["with"]["stack-name"]).replace("${{ matrix.stack }}", str(entry.get("stack", "")))
            scope = str(job.get("environment", "repository"))
            roles.append(AssumedRole(stack.rsplit("/", 1)[-1], scope, match.group(1), str(step["with"]["command"])))
    return roles


@pytest.mark.parametrize("stack", STACKS)
def test_every_assumed_role_has_the_access_its_pulumi_step_needs(
    workflows: dict[str, dict[str, Any]], stack: str
) -> None:
    settings = settings_for(stack)
    matrix = access_matrix(settings.cluster, settings.labs)
    checked = []
    for workflow in workflows.values():
        for role in assumed_roles(workflow):
            if role.stack != stack:
                continue
            key = ROLE_KEYS[role.variable]
            grants = {g.access for a in matrix for g in a.grants if any(k.startswith(key) for k in g.keys)}
            assert grants & ACCESS_NEEDED[role.command], (role, key, grants)
            checked.append(role.command)
    assert sorted(checked) == ["preview", "up"]


def test_every_role_variable_is_known() -> None:
    used = {role.variable for path in WORKFLOWS for role in assumed_roles(_load(path))}
    assert used == set(ROLE_KEYS)


_ACCOUNT = re.compile(r"\barn:aws[\w-]*:iam::(\d{12}):")


def stack_accounts(stack_values: dict[str, Any]) -> set[str]:
    """The AWS accounts of every IAM ARN a stack file holds (its principals live in the stack's account)."""
    return set(_ACCOUNT.findall(json.dumps(stack_values)))


def shared_role_variables(roles: list[AssumedRole], accounts: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """`(scope, variable)` -> stacks, for each role variable that stacks of different accounts share: one of
    them would assume a role in the wrong account."""
    by_variable: dict[tuple[str, str], set[str]] = {}
    for role in roles:
        by_variable.setdefault((role.scope, role.variable), set()).add(role.stack)
    return {
        key: sorted(stacks)
        for key, stacks in by_variable.items()
        if len(stacks) > 1 and len(set().union(*(accounts[s] for s in stacks))) > 1
    }


def test_stacks_in_different_accounts_never_share_a_role_variable(workflows: dict[str, dict[str, Any]]) -> None:
    accounts = {stack: stack_accounts(read_stack_config(PROJECT_DIR, stack).values) for stack in STACKS}
    assert accounts == {"staging": {"111122223333"}, "prod": {"444455556666"}}
    roles = [role for workflow in workflows.values() for role in assumed_roles(workflow)]
    assert {role.stack for role in roles} == set(STACKS)
    assert shared_role_variables(roles, accounts) == {}


def test_one_preview_role_variable_for_two_accounts_is_caught(workflows: dict[str, dict[str, Any]]) -> None:
    """The workflow before per-stack roles: one `AWS_PREVIEW_ROLE_ARN` for staging and prod."""
    text = (WORKFLOWS_DIR / "preview.yml").read_text(encoding="utf-8")
    shared = re.sub(r"vars\.AWS_PREVIEW_ROLE_ARN_\w+", "vars.AWS_PREVIEW_ROLE_ARN", text)
    roles = assumed_roles(_load_text(shared))
    accounts = {stack: stack_accounts(read_stack_config(PROJECT_DIR, stack).values) for stack in STACKS}
    assert shared_role_variables(roles, accounts) == {("repository", "AWS_PREVIEW_ROLE_ARN"): ["prod", "staging"]}


def test_the_preview_refuses_an_unset_or_foreign_role(workflows: dict[str, dict[str, Any]]) -> None:
    """An empty role-to-assume makes the AWS action fall back to the runner's own credentials."""
    (job,) = workflows["preview"]["jobs"].values()
    steps = _steps(job)
    (aws_at,) = [i for i, s in enumerate(steps) if _action(s) == AWS_CREDENTIALS_ACTION]
    (guard_at,) = [i for i, s in enumerate(steps) if '[ -z "$PREVIEW_ROLE" ]' in s.get("run", "")]
    assert guard_at < aws_at
    assert steps[guard_at]["env"]["PREVIEW_ROLE"] == steps[aws_at]["with"]["role-to-assume"]
    assert "Pulumi.$STACK.yaml" in steps[guard_at]["run"]


def test_every_variable_and_secret_the_workflows_read_is_in_the_lifecycle_runner_section() -> None:
    lifecycle = (PROJECT_DIR / "docs" / "lifecycle.md").read_text(encoding="utf-8")
    runner = lifecycle.split("### Runner", 1)[1].split("\n## ", 1)[0]
    readme = (PROJECT_DIR / "README.md").read_text(encoding="utf-8")
    assert "(docs/lifecycle.md#runner-where-previewup-run-from)" in readme, "the README points to the full list"
    used = {match for path in WORKFLOWS for match in VARIABLE.findall(path.read_text(encoding="utf-8"))}
    assert {name for kind, name in used if kind == "vars"} >= {"AWS_DEPLOY_ROLE_ARN", "PULUMI_ORG", "SHARED_REPOSITORY"}
    for kind, name in sorted(used):
        assert f"`{name}`" in runner or f"**`{name}`**" in runner, f"{kind}.{name} is not in docs/lifecycle.md 'Runner'"


def test_pull_requests_run_offline_diff_against_the_base_branch_into_the_job_summary(
    workflows: dict[str, dict[str, Any]],
) -> None:
    (job,) = workflows["preview"]["jobs"].values()
    steps = _steps(job)
    (base,) = [s for s in steps if _action(s) == "actions/checkout" and s.get("with", {}).get("path") == "base"]
    assert base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    (diff_at,) = [i for i, s in enumerate(steps) if "python -m offline.diff build/base build/head" in s.get("run", "")]
    script = steps[diff_at]["run"]
    assert "--out ../build/base" in script and "--out build/head" in script
    assert '>> "$GITHUB_STEP_SUMMARY"' in script and 'exit "$status"' in script
    assert diff_at < min(i for i, s in enumerate(steps) if _action(s) == PULUMI_ACTION)


def test_preflight_runs_every_check_before_up_and_all_but_caller_before_preview(
    workflows: dict[str, dict[str, Any]],
) -> None:
    for name, expected in (("deploy", None), ("preview", "reach,addons,addon-config,quotas")):
        for job in workflows[name]["jobs"].values():
            runs = [s.get("run", "") for s in _steps(job) if "preflight.py" in s.get("run", "")]
            if not _steps(job):
                continue
            (run,) = runs
            assert (f"--check {expected}" in run) if expected else "--check" not in run, run


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("", "set the repository variable AWS_PREVIEW_ROLE_ARN_PROD"),
        ("arn:aws:iam::111122223333:role/github-actions-preview", "is not in Pulumi.prod.yaml"),
        ("arn:aws:iam::444455556666:role/github-actions-preview", None),
    ],
    ids=["unset", "staging-role-for-prod", "prods-own"],
)
def test_the_preview_role_guard_runs(
    workflows: dict[str, dict[str, Any]], tmp_path: Path, role: str, expected: str | None
) -> None:
    """The guard step's own script, run by bash as the runner runs it, in a folder holding prod's stack file."""
    (job,) = workflows["preview"]["jobs"].values()
    (guard,) = [s for s in _steps(job) if '[ -z "$PREVIEW_ROLE" ]' in s.get("run", "")]
    (tmp_path / "Pulumi.prod.yaml").write_bytes((PROJECT_DIR / "Pulumi.prod.yaml").read_bytes())
    result = subprocess.run(
        ["bash", "-e", "-c", guard["run"]],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "STACK": "prod", "PREVIEW_ROLE": role},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if expected is None:
        assert result.returncode == 0, result.stdout + result.stderr
    else:
        assert result.returncode == 1 and expected in result.stdout, result.stdout + result.stderr
