"""policy/k8s_values.py: the API server's name, label and annotation rules, on every manifest the synth writes.

The rule functions are held to the examples kubernetes/apimachinery @ v0.35.0 accepts and refuses
(`pkg/api/validate/content/dns_test.go`, `kube_test.go`, `pkg/api/validation/path/name_test.go`); every
synth and `python -m policy.check DIR` run them; each violating manifest below is a real one from the plan
with one value broken.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from offline.plan import Plan
from policy import check, k8s_values
from policy.k8s_values import (
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    label_value,
    object_violations,
    path_segment_name,
    qualified_name,
)
from tests.conftest import STACKS, synth_in_process
from tests.support.settings import settings_for


@pytest.mark.parametrize("stack", STACKS)
def test_the_rules_are_those_of_the_kubernetes_version_the_stack_pins(stack: str) -> None:
    """A version bump re-reads the cited files at the new tags, then moves `KUBERNETES_VERSION`."""
    settings = settings_for(stack)
    assert settings.kubernetes_version == k8s_values.KUBERNETES_VERSION


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_every_manifest_of_both_stacks_passes(stack: str, plans: dict[str, Plan]) -> None:
    manifests = plans[stack].manifests
    assert len(manifests) > 30
    assert list(k8s_values.manifest_violations(manifests)) == []


def test_every_kind_the_plans_write_has_a_name_rule(plans: dict[str, Plan]) -> None:
    """Kinds the API server serves have their own entry; only the CRDs' groups take the custom-resource rule."""
    kinds = {(o["apiVersion"], o["kind"]) for plan in plans.values() for o in plan.manifests.values()}
    rules = {kind: k8s_values.name_rule(*kind) for kind in kinds}
    assert None not in rules.values()
    custom = {
        api_version.split("/")[0] for (api_version, _), rule in rules.items() if rule == k8s_values.CUSTOM_RESOURCE_RULE
    }
    assert custom == {"karpenter.sh", "karpenter.k8s.aws", "autoscaling.x-k8s.io"}


def test_the_rules_accept_and_refuse_what_apimachinery_does() -> None:
    for good in ("a", "ab", "a-1", "0", "1-a", "a" * 63):
        assert dns1123_label(good) == [], good
    for bad in ("", "A", "-a", "a-", "a_b", "a.b", "a" * 64, "a\n"):
        assert dns1123_label(bad), bad
    for good in ("a.b", "a-1.b-2.c", "0.a", ".".join(["a" * 63] * 3) + ".abc"):
        assert dns1123_subdomain(good) == [], good
    for bad in ("a..b", ".a", "a.", "A.b", "a_b", "a" * 254):
        assert dns1123_subdomain(bad), bad
    assert dns1035_label("abc-1") == [] and dns1035_label("1abc") and dns1035_label("a" * 64)
    for good in ("simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple", "ab_c", "a.b",
                 "example.com/MyName", "nvidia.com/gpu", "karpenter.sh/nodepool", "a" * 63):  # fmt: skip
        assert qualified_name(good) == [], good
    for bad in ("nospecialchars%^=@", "Tama-nui-te-rā.is/Māori", "a/b/c", "/simple", "Example.com/x", "-a", "a" * 64,
                "example.com/" + "a" * 64, "prefix/"):  # fmt: skip
        assert qualified_name(bad), bad
    for good in ("", "simple", "now-with-dashes", "1234", "A", "a_b.C", "a" * 63):
        assert label_value(good) == [], good
    for bad in ("nospecialchars%^=@", "Tama-nui-te-rā", "-a", "a-", "a b", "a" * 64, "a/b"):
        assert label_value(bad), bad
    assert path_segment_name("edit:lab") == [] and path_segment_name("a%b") == ["may not contain '%'"]
    assert path_segment_name("..") == ["may not be '..'"] and path_segment_name("a/b") == ["may not contain '/'"]


def _one(plan: Plan, kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(o for o in plan.manifests.values() if o["kind"] == kind))


def _broken(plan: Plan) -> list[tuple[dict[str, Any], str]]:
    """(a real manifest with one value broken, what the finding must name)."""
    cases = []
    namespace = _one(plan, "Namespace")
    namespace["metadata"]["name"] = "Vision_Lab"  # a subdomain would do for most kinds, a namespace is a label
    cases.append((namespace, "metadata.name 'Vision_Lab': a lowercase RFC 1123 label"))
    service = _one(plan, "Service")
    service["metadata"]["name"] = "1-dcgm"  # a fine DNS-1123 label, but Service names are DNS-1035
    cases.append((service, "metadata.name '1-dcgm': a DNS-1035 label"))
    role = _one(plan, "Role")
    role["metadata"]["name"] = "lab/edit"
    cases.append((role, "metadata.name 'lab/edit': may not contain '/' (kubernetes/kubernetes @ v1.35.0 pkg/apis/rbac"))
    cronjob = _one(plan, "CronJob")
    cronjob["metadata"]["name"] = "c" * 53
    cases.append((cronjob, "must be no more than 52 characters"))
    nodepool = _one(plan, "NodePool")
    nodepool["metadata"]["name"] = "T4-Shared"
    cases.append((nodepool, "metadata.name 'T4-Shared': a lowercase RFC 1123 subdomain"))
    daemonset = _one(plan, "DaemonSet")
    daemonset["spec"]["template"]["metadata"].setdefault("labels", {})["app.kubernetes.io/version"] = "v" * 64
    cases.append((daemonset, "spec.template.metadata.labels[app.kubernetes.io/version] value"))
    quota = _one(plan, "ResourceQuota")
    quota["metadata"]["labels"] = {"example.com/team/a": "x"}
    cases.append((quota, "metadata.labels key 'example.com/team/a': a qualified name has at most one '/'"))
    configmap = _one(plan, "ConfigMap")
    configmap["metadata"]["annotations"] = {"Example.com/Note": "ok", "note:why": "x"}  # the key is lowercased first
    cases.append((configmap, "metadata.annotations key 'note:why': name part must consist"))
    pod = _one(plan, "Pod")
    pod["metadata"]["annotations"] = {"gpu-platform.example.org/notes": "x" * (256 * 1024)}
    cases.append((pod, "metadata.annotations: 262174 bytes of keys and values, over the 262144 limit"))
    policy = _one(plan, "NetworkPolicy")
    policy["spec"]["podSelector"] = {"matchLabels": {"app": "dcgm exporter"}}
    cases.append((policy, "spec.podSelector.matchLabels[app] value 'dcgm exporter'"))
    notebook = _one(plan, "Pod")
    notebook["spec"]["nodeSelector"] = {"node.kubernetes.io/instance-type": "g4dn.xlarge,g5.xlarge"}
    cases.append((notebook, "spec.nodeSelector[node.kubernetes.io/instance-type] value"))
    cronjob = _one(plan, "CronJob")
    cronjob["spec"]["jobTemplate"].setdefault("metadata", {})["labels"] = {"lab": "-t4"}
    cases.append((cronjob, "spec.jobTemplate.metadata.labels[lab] value '-t4'"))
    unknown = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"}}
    cases.append((unknown, "no name rule known for apps/v1 ReplicaSet"))
    return cases


def test_each_broken_value_is_refused_naming_the_field_the_value_and_the_rule(prod_plan: Plan) -> None:
    for obj, expected in _broken(prod_plan):
        found = object_violations(obj)
        assert any(expected in message for message in found), (expected, found)
        assert all("(kubernetes/" in message or "add it to policy/k8s_values.py" in message for message in found)
        # Only the broken value is reported: the rest of the real manifest passes.
        assert len({m.split(":", 1)[0] for m in found}) == 1, found


def test_policy_check_reports_a_broken_manifest(
    prod_plan: Plan, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prod_plan.write(tmp_path / "clean")
    assert check.main([str(tmp_path / "clean")]) in (0, 1)  # 1: the stack's documentation values
    assert k8s_values.RULE_NAME not in capsys.readouterr().out
    shutil.copytree(tmp_path / "clean", tmp_path / "broken")
    namespace = next(p for p in sorted((tmp_path / "broken" / "manifests").glob("namespace-*.yaml")))
    obj = yaml.safe_load(namespace.read_text(encoding="utf-8"))
    obj["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), "team": "Machine Learning"}
    namespace.write_text(yaml.safe_dump(obj), encoding="utf-8")
    assert check.main([str(tmp_path / "broken")]) == 1
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(k8s_values.RULE_NAME))
    assert f"Namespace/{obj['metadata']['name']} (manifests/{namespace.name})" in line
    assert "metadata.labels[team] value 'Machine Learning'" in line and "ValidateLabels" in line


def test_the_synth_refuses_a_plan_the_api_server_would_refuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A renderer that wrote an invalid label: exit 1 naming it; the plan stays written for `policy.check DIR`."""
    real = Plan.from_recording

    def with_bad_label(recording: Any) -> Plan:
        plan = real(recording)
        obj = next(o for o in plan.manifests.values() if o["kind"] == "Namespace")
        obj["metadata"].setdefault("labels", {})["gpu-platform/lab"] = "x" * 64
        return plan

    monkeypatch.setattr(Plan, "from_recording", staticmethod(with_bad_label))
    code, _, stderr = synth_in_process("staging", tmp_path / "out")
    assert code == 1, stderr
    assert "metadata.labels[gpu-platform/lab] value" in stderr and "must be no more than 63 characters" in stderr
    assert (tmp_path / "out" / "resources.json").exists()
