"""Security linters over everything the program writes, found generically in every stack's plan.

- parliament on every IAM policy document in any resource input (identity policies, role trust
  policies, SQS queue policies ...), one statement at a time so each finding maps to a Sid, plus a
  whole-role pass for escalations that only appear when a role's policies are combined. Findings at
  LOW and above count (a typo'd action is only LOW); accepted ones are listed one by one in
  `tests/support/iam_allowlist.py`.
- checkov on every Kubernetes manifest the synth writes, in one offline subprocess. A check may only
  be skipped by a `checkov.io/skipN` annotation with a reason on the object itself, and only for a
  check listed in `tests/support/checkov_allowlist.py`.

checkov 3.3.30 pins `packaging<24` while pulumi 3.272.0 needs `packaging>=26`, so it lives in its own
virtualenv, `.venv-checkov`, which the test session creates from `requirements-checkov.txt` on first
use (and re-creates when that file changes). The README's single test command therefore installs it.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import parliament
import pytest
import yaml
from parliament.cli import is_finding_filtered

from offline.plan import Plan
from tests.conftest import PROJECT_DIR, STACKS
from tests.support.checkov_allowlist import SKIPPABLE_CHECKS
from tests.support.iam_allowlist import ALLOWED_FINDINGS

# --- IAM documents ------------------------------------------------------------------------------------------

ROLE_TYPE = "aws:iam/role:Role"
TRUST_POLICY_INPUT = "assumeRolePolicy"
ATTACHMENT_TYPES = ("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "aws:iam/rolePolicy:RolePolicy")
# The community auditor flags sts:AssumeRole as "returns credentials to the caller": that is exactly what a
# trust policy grants, to the principals it names - not a finding about the trust document itself.
NOT_APPLICABLE_TO_TRUST = frozenset({"CREDENTIALS_EXPOSURE"})
TRUST_ACTIONS = frozenset(
    {"sts:AssumeRole", "sts:TagSession", "sts:AssumeRoleWithWebIdentity", "sts:SetSourceIdentity"}
)


@dataclass(frozen=True)
class PolicyDocument:
    """One policy document found in one resource input of one stack's plan."""

    stack: str
    resource: dict[str, Any]
    input_path: str
    document: dict[str, Any]

    @property
    def label(self) -> str:
        return f"{self.stack}: {self.resource['type']} {self.resource['name']} .{self.input_path}"

    @property
    def is_trust_policy(self) -> bool:
        return self.resource["type"] == ROLE_TYPE and self.input_path == TRUST_POLICY_INPUT

    @property
    def statements(self) -> list[dict[str, Any]]:
        statement = self.document["Statement"]
        return statement if isinstance(statement, list) else [statement]

    def statement_scope(self, index: int) -> str:
        """Sid, else a name stable across stacks (logical names do not contain the cluster name)."""
        return self.statements[index].get("Sid") or f"{self.resource['name']}.{self.input_path}[{index}]"


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, f"{path}[{index}]")


def _as_document(path: str, value: Any) -> dict[str, Any] | None:
    """The policy document an input value holds (an object, or JSON text), else None; broken JSON fails."""
    if isinstance(value, dict) and "Statement" in value:
        return value
    if isinstance(value, str) and value.lstrip().startswith("{") and '"Statement"' in value:
        try:
            document = json.loads(value)
        except json.JSONDecodeError as exc:
            pytest.fail(f"input {path} holds a policy that is not valid JSON ({exc}): {value[:200]!r}")
        return document if isinstance(document, dict) and "Statement" in document else None
    return None


def policy_documents(stack: str, plan: Plan) -> list[PolicyDocument]:
    found = []
    for resource in plan.resources:
        for path, value in _walk(resource["inputs"], ""):
            document = _as_document(path, value)
            if document is not None:
                found.append(PolicyDocument(stack, resource, path, document))
    return found


@pytest.fixture(scope="module")
def documents(plans: dict[str, Plan]) -> list[PolicyDocument]:
    return [doc for stack, plan in plans.items() for doc in policy_documents(stack, plan)]


@pytest.fixture(scope="module")
def parliament_configured() -> None:
    """Community auditors' issue types must be known before enhance_finding (docs/validation.md, IAM policies)."""
    package_dir = Path(parliament.__file__).parent
    parliament.override_config(str(package_dir / "community_auditors" / "config_override.yaml"))


def parliament_findings(version: str | None, statements: list[dict[str, Any]]) -> list[Any]:
    """Findings at LOW and above (an unknown action is only LOW: never filter at MEDIUM)."""
    text = json.dumps({"Version": version or "2012-10-17", "Statement": statements})
    policy = parliament.analyze_policy_string(text, include_community_auditors=True)
    return [f for f in map(parliament.enhance_finding, policy.findings) if not is_finding_filtered(f, "LOW")]


def role_arn(role: dict[str, Any]) -> str:
    # The account is irrelevant to parliament's checks; the ARN only has to have the role's shape.
    return f"arn:aws:iam::000000000000:role/{role['inputs'].get('name', role['name'])}"


def statement_findings(doc: PolicyDocument) -> list[tuple[tuple[str, str], str]]:
    """((issue, scope), description) per finding, one statement at a time."""
    results = []
    for index, statement in enumerate(doc.statements):
        if doc.is_trust_policy:
            # A trust policy is the role's resource policy: its resource is the role itself. Naming it lets
            # parliament check the actions and condition keys as it does for identity policies.
            statement = {**statement, "Resource": role_arn(doc.resource)}
        for finding in parliament_findings(doc.document.get("Version"), [statement]):
            if doc.is_trust_policy and finding.issue in NOT_APPLICABLE_TO_TRUST:
                continue
            key = (finding.issue, doc.statement_scope(index))
            results.append((key, f"{doc.label}: {finding.severity} {finding.issue} {finding.detail}"))
    return results


def role_findings(stack: str, plan: Plan, documents: list[PolicyDocument]) -> list[tuple[tuple[str, str], str]]:
    """Findings that appear only when all of one role's customer-managed and inline policies are combined.

    AWS-managed policies (arn:aws:iam::aws:policy/...) are not in the plan and cannot be read offline.
    """
    identity_docs: dict[str, list[PolicyDocument]] = {}
    for doc in documents:
        if doc.stack == stack and not doc.is_trust_policy:
            identity_docs.setdefault(doc.resource["urn"], []).append(doc)
    docs_of_role = {role["urn"]: list(identity_docs.get(role["urn"], [])) for role in plan.of_type(ROLE_TYPE)}
    for attachment in plan.resources:
        if attachment["type"] not in ATTACHMENT_TYPES:
            continue
        roles = [urn for urn in attachment["dependencies"] if urn in docs_of_role]
        assert len(roles) == 1, f"{attachment['name']}: cannot tell which role it attaches to ({roles})"
        for urn in [attachment["urn"], *attachment["dependencies"]]:
            docs_of_role[roles[0]] += identity_docs.get(urn, [])
    results = []
    for role_urn, docs in docs_of_role.items():
        if not docs:
            continue
        single = {issue for doc in docs for (issue, _), _ in statement_findings(doc)}
        role = plan.by_urn(role_urn)
        for finding in parliament_findings("2012-10-17", [s for doc in docs for s in doc.statements]):
            if finding.issue not in single:
                key = (finding.issue, f"role:{role['name']}")
                results.append(
                    (key, f"{stack}: role {role['name']}: {finding.severity} {finding.issue} {finding.location}")
                )
    return results


def test_every_stack_writes_policy_documents(documents: list[PolicyDocument]) -> None:
    """The generic search finds the documents it must: every policy, trust and queue policy input."""
    for stack in STACKS:
        found = {(d.resource["type"], d.input_path) for d in documents if d.stack == stack}
        assert ("aws:iam/policy:Policy", "policy") in found
        assert (ROLE_TYPE, TRUST_POLICY_INPUT) in found


def test_every_policy_input_is_found(plans: dict[str, Plan], documents: list[PolicyDocument]) -> None:
    known_inputs = {
        "aws:iam/policy:Policy": "policy",
        ROLE_TYPE: TRUST_POLICY_INPUT,
        "aws:iam/rolePolicy:RolePolicy": "policy",
        "aws:sqs/queuePolicy:QueuePolicy": "policy",
    }
    found = {(d.stack, d.resource["urn"], d.input_path) for d in documents}
    for stack, plan in plans.items():
        for type_token, input_key in known_inputs.items():
            for resource in plan.of_type(type_token):
                assert (stack, resource["urn"], input_key) in found, f"{stack}: {resource['name']} .{input_key}"


@pytest.mark.usefixtures("parliament_configured")
def test_parliament_findings_are_fixed_or_allow_listed(plans: dict[str, Plan], documents: list[PolicyDocument]) -> None:
    findings = [f for doc in documents for f in statement_findings(doc)]
    findings += [f for stack, plan in plans.items() for f in role_findings(stack, plan, documents)]
    unexpected = sorted(description for key, description in findings if key not in ALLOWED_FINDINGS)
    assert unexpected == [], "fix these IAM findings, or allow-list each with its reason:\n" + "\n".join(unexpected)
    stale = sorted(set(ALLOWED_FINDINGS) - {key for key, _ in findings})
    assert stale == [], f"allow-list entries that match no finding any more (remove them): {stale}"


def test_allow_list_entries_give_a_reason() -> None:
    for key, reason in ALLOWED_FINDINGS.items():
        assert len(reason.split()) >= 5, f"{key}: say why the finding is right for this program"


def test_trust_policies_name_specific_principals(documents: list[PolicyDocument]) -> None:
    """parliament ignores principals; a trust policy's whole point is who may assume the role."""
    trust = [doc for doc in documents if doc.is_trust_policy]
    assert trust
    for doc in trust:
        for statement in doc.statements:
            assert statement["Effect"] == "Allow", doc.label
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert set(actions) <= TRUST_ACTIONS, f"{doc.label}: {actions}"
            principal = statement.get("Principal")
            assert isinstance(principal, dict) and "NotPrincipal" not in statement, doc.label
            for kind, values in principal.items():
                for value in values if isinstance(values, list) else [values]:
                    assert "*" not in value, f"{doc.label}: wildcard {kind} principal {value}"
                    if kind == "Service":
                        assert value.endswith(".amazonaws.com"), f"{doc.label}: {value}"


def test_resource_policies_never_allow_everyone(documents: list[PolicyDocument]) -> None:
    """An Allow to `*` (or AWS `*`) without a condition makes the resource public; Deny to `*` is fine."""
    resource_policies = [d for d in documents if any("Principal" in s or "NotPrincipal" in s for s in d.statements)]
    assert resource_policies
    for doc in resource_policies:
        for statement in doc.statements:
            principal = statement.get("Principal")
            public = principal == "*" or (isinstance(principal, dict) and "*" in str(principal.get("AWS", "")))
            if statement["Effect"] == "Allow":
                assert not public or "Condition" in statement, f"{doc.label}: public Allow"
                assert "NotPrincipal" not in statement, f"{doc.label}: NotPrincipal with Allow"


@pytest.mark.usefixtures("parliament_configured")
@pytest.mark.parametrize(
    ("statement", "issue"),
    [
        ({"Effect": "Allow", "Action": "ec2:RunInstance", "Resource": "*"}, "UNKNOWN_ACTION"),
        ({"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": "arn:aws:s3:::bucket"}, "RESOURCE_MISMATCH"),
        (
            {
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": "arn:aws:iam::000000000000:role/x",
                "Condition": {"StringEquals": {"iam:PassedToServce": "ec2.amazonaws.com"}},
            },
            "UNKNOWN_CONDITION_FOR_ACTION",
        ),
    ],
)
def test_parliament_catches_broken_statements(statement: dict[str, Any], issue: str) -> None:
    """Through the same path as the plan's documents: the typo (LOW) is not filtered away."""
    resource = {"type": "aws:iam/policy:Policy", "name": "broken", "urn": "u"}
    doc = PolicyDocument("negative", resource, "policy", {"Version": "2012-10-17", "Statement": [statement]})
    keys = {key for key, _ in statement_findings(doc)}
    assert (issue, "broken.policy[0]") in keys
    assert not keys & set(ALLOWED_FINDINGS)


@pytest.mark.usefixtures("parliament_configured")
def test_a_typo_in_an_allow_listed_statement_is_still_caught(staging_plan: Plan) -> None:
    """The allow-list is per (issue, Sid): a new kind of finding in an accepted statement still fails."""
    resources = copy.deepcopy(staging_plan.resources)
    typo = [r for r in resources if "ec2:RunInstances" in str(r["inputs"].get("policy", ""))]
    assert typo, "no policy grants ec2:RunInstances in the staging plan"
    typo[0]["inputs"]["policy"] = typo[0]["inputs"]["policy"].replace("ec2:RunInstances", "ec2:RunInstance")
    broken = Plan(resources=resources, manifests={}, helm=[])
    unexpected = {
        key
        for doc in policy_documents("staging", broken)
        for key, _ in statement_findings(doc)
        if key not in ALLOWED_FINDINGS
    }
    assert {issue for issue, _ in unexpected} == {"UNKNOWN_ACTION"}, unexpected


@pytest.mark.usefixtures("parliament_configured")
def test_parliament_catches_a_typo_in_a_trust_policy() -> None:
    role = {"type": ROLE_TYPE, "name": "broken-role", "urn": "u", "inputs": {"name": "broken-role"}}
    statement = {"Effect": "Allow", "Action": "sts:AssumeRol", "Principal": {"Service": "ec2.amazonaws.com"}}
    doc = PolicyDocument("negative", role, TRUST_POLICY_INPUT, {"Version": "2012-10-17", "Statement": [statement]})
    assert ("UNKNOWN_ACTION", "broken-role.assumeRolePolicy[0]") in {key for key, _ in statement_findings(doc)}


# --- checkov ------------------------------------------------------------------------------------------------

CHECKOV_REQUIREMENTS = PROJECT_DIR / "requirements-checkov.txt"
CHECKOV_VENV = PROJECT_DIR / ".venv-checkov"
CHECKOV_ENV = {"CKV_SKIP_PACKAGE_UPDATE_CHECK": "true", "BC_SKIP_MAPPING": "TRUE"}  # 0 network connects
OUTCOMES = ("passed_checks", "failed_checks", "skipped_checks")
WORKLOAD_KINDS = ("Pod", "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet", "Job", "CronJob")


def _requirements_stamp() -> str:
    text = CHECKOV_REQUIREMENTS.read_text(encoding="utf-8")
    return hashlib.sha256(f"{sys.version}\n{text}".encode()).hexdigest()


@contextlib.contextmanager
def _install_lock() -> Iterator[None]:
    """Parallel test sessions on one checkout install the tool venv once."""
    lock_name = f"gpu-platform-checkov-{hashlib.sha256(str(CHECKOV_VENV).encode()).hexdigest()[:12]}.lock"
    with open(Path(tempfile.gettempdir()) / lock_name, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="session")
def checkov_bin() -> Path:
    """checkov from its own pinned venv, created (or refreshed) when requirements-checkov.txt changes."""
    stamp_file = CHECKOV_VENV / "requirements.sha256"
    binary = CHECKOV_VENV / "bin" / "checkov"
    with _install_lock():
        if not (binary.exists() and stamp_file.exists() and stamp_file.read_text() == _requirements_stamp()):
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(CHECKOV_VENV)], check=True, timeout=300)
            # Like Python 3.13's venv: the tool venv ignores itself (git status, ruff).
            (CHECKOV_VENV / ".gitignore").write_text("*\n", encoding="utf-8")
            install = [str(CHECKOV_VENV / "bin" / "python"), "-m", "pip", "install", "-q"]
            result = subprocess.run(
                [*install, "-r", str(CHECKOV_REQUIREMENTS)], capture_output=True, text=True, timeout=1200, check=False
            )
            assert result.returncode == 0, f"installing checkov failed:\n{result.stdout}\n{result.stderr}"
            stamp_file.write_text(_requirements_stamp())
    pinned = re.search(r"^checkov==(\S+)", CHECKOV_REQUIREMENTS.read_text(), re.MULTILINE)
    assert pinned, "requirements-checkov.txt must pin checkov=="
    # The installed distribution's version (what `checkov --version` prints, without its ~3 s of imports).
    python = str(CHECKOV_VENV / "bin" / "python")
    installed = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('checkov'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert installed.stdout.strip() == pinned.group(1)
    return binary


def _checkov_env() -> dict[str, str]:
    return {**os.environ, **CHECKOV_ENV}


# A DaemonSet that breaks what the real manifests comply with; it must fail exactly these checks.
PRIVILEGED_DAEMON_SET = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "broken", "namespace": "kube-system"},
    "spec": {
        "selector": {"matchLabels": {"app": "broken"}},
        "template": {
            "metadata": {"labels": {"app": "broken"}},
            "spec": {
                "hostNetwork": True,
                "containers": [
                    {"name": "c", "image": "example.com/broken:latest", "securityContext": {"privileged": True}}
                ],
            },
        },
    },
}
PRIVILEGED_FAILS = {"CKV_K8S_16", "CKV_K8S_19", "CKV_K8S_14"}  # privileged, hostNetwork, image tag :latest


@dataclass(frozen=True)
class CheckovRun:
    report: dict[str, Any]

    def results(self, outcome: str, directory: str) -> list[dict[str, Any]]:
        """Results of one scanned sub-directory (a stack, or "negative"); paths read `/<dir>/<file>`."""
        return [r for r in self.report["results"][outcome] if Path(r["file_path"]).parts[1] == directory]


@pytest.fixture(scope="module")
def checkov_run(checkov_bin: Path, plans: dict[str, Plan], tmp_path_factory: pytest.TempPathFactory) -> CheckovRun:
    """One checkov subprocess over every stack's manifests (as the synth writes them) and a negative case.

    One `-d` over a directory with one sub-directory per stack: checkov 3.3.30 mishandles several `-d`
    (the second report repeats the first and drops the rest).
    """
    synth_out, root = tmp_path_factory.mktemp("plans"), tmp_path_factory.mktemp("checkov")
    for stack, plan in plans.items():
        plan.write(synth_out / stack)
        shutil.copytree(synth_out / stack / "manifests", root / stack)
    (root / "negative").mkdir()
    (root / "negative" / "daemonset-broken.yaml").write_text(yaml.safe_dump(PRIVILEGED_DAEMON_SET), encoding="utf-8")
    # No --quiet: it drops passed checks from the JSON report too.
    command = [str(checkov_bin), "-d", str(root), "--framework", "kubernetes", "--skip-download", "-o", "json"]
    result = subprocess.run(command, capture_output=True, text=True, env=_checkov_env(), timeout=300, check=False)
    assert result.returncode in (0, 1), f"checkov crashed (rc {result.returncode}):\n{result.stderr}"
    report = json.loads(result.stdout)
    assert isinstance(report, dict) and report["check_type"] == "kubernetes", result.stdout[:500]
    return CheckovRun(report)


def test_checkov_read_every_manifest(checkov_run: CheckovRun, plans: dict[str, Plan]) -> None:
    summary = checkov_run.report["summary"]
    assert summary["resource_count"] >= 1 and summary["parsing_errors"] == 0, summary
    for stack, plan in plans.items():
        checked = {Path(r["file_path"]).name for outcome in OUTCOMES for r in checkov_run.results(outcome, stack)}
        workloads = [name for name, obj in plan.manifests.items() if obj["kind"] in WORKLOAD_KINDS]
        assert workloads, f"{stack}: no workload manifests"
        missing = [name for name in workloads if name not in checked]
        assert missing == [], f"{stack}: checkov did not check {missing}"


@pytest.mark.parametrize("stack", STACKS)
def test_checkov_finds_nothing(checkov_run: CheckovRun, stack: str) -> None:
    failed = checkov_run.results("failed_checks", stack)
    problems = sorted(
        f"{r['check_id']} {r['check_name']}: {r['resource']} ({Path(r['file_path']).name})" for r in failed
    )
    assert problems == [], "fix the manifest, or (only if inherent) annotate the object:\n" + "\n".join(problems)


@pytest.mark.parametrize("stack", STACKS)
def test_checkov_skips_are_inherent_and_explained(checkov_run: CheckovRun, stack: str) -> None:
    for skipped in checkov_run.results("skipped_checks", stack):
        where = f"{skipped['check_id']} on {skipped['resource']}"
        assert skipped["check_id"] in SKIPPABLE_CHECKS, f"{where}: not a check that may be skipped; fix it"
        reason = (skipped.get("check_result") or {}).get("suppress_comment") or ""
        assert len(reason.split()) >= 4, f"{where}: the annotation must say why ({reason!r})"


def test_checkov_catches_a_privileged_daemon_set(checkov_run: CheckovRun) -> None:
    failed = {r["check_id"] for r in checkov_run.results("failed_checks", "negative")}
    assert failed >= PRIVILEGED_FAILS
