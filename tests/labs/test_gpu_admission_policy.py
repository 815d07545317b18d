"""The GPU admission guard, evaluated offline the way the kube-apiserver would admit or deny a pod.

Every request goes through `tests.support.apiserver_model`: decode (quantities parsed), defaulting (requests from
limits), the mutating plugins EKS runs (LimitRanger with the lab's LimitRange, DefaultTolerationSeconds,
ExtendedResourceToleration), field validation, then the policy's CEL (common-expression-language) with the
variables a ValidatingAdmissionPolicy sees. The table covers every rule in lab, non-lab and system
namespaces, init and ephemeral containers, key-less `Exists` tolerations, `void`/`none`, and every form of
a zero `nvidia.com/gpu` limit the API server accepts.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.facts.constants import (
    GPU_ENABLED_NAMESPACE_LABEL,
    GPU_RESOURCE,
    GPU_TAINT,
    PLATFORM_SYSTEM_NAMESPACES,
    SYSTEM_NAMESPACE,
)
from components.renderers.device_plugin.device_plugin_manifests import device_plugin_objects
from components.renderers.labs.demo_manifests import demo_deployment
from components.renderers.labs.gpu_admission_policy import (
    admission_objects,
    admission_policy,
    admission_policy_binding,
    validations,
    workload_admission_policy,
)
from components.renderers.labs.lab_manifests import lab_limit_range, lab_namespace
from components.settings import GpuSharingSettings, LabSettings, StackSettings
from offline.plan import Plan
from tests.conftest import STACKS
from tests.support import apiserver_model
from tests.support.apiserver_model import Outcome, Request
from tests.support.k8s_validation import validate_core_object
from tests.support.settings import settings_for

LAB_SETTINGS = LabSettings(name="vision-lab", gpu_slots=4)
LAB = lab_namespace(LAB_SETTINGS, "1.35")
OTHER: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-apps", "labels": {}}}
SYSTEM: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM_NAMESPACE, "labels": {}}}
NAMESPACES = {ns["metadata"]["name"]: ns for ns in (LAB, OTHER, SYSTEM)}
LIMIT_RANGES = {"vision-lab": [lab_limit_range(LAB_SETTINGS)]}
NON_SYSTEM = ("vision-lab", "team-apps")
POLICY_TYPE = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING_TYPE = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"

MESSAGES = {
    "env": validations()[0]["message"],
    "opt-out": validations()[1]["message"],
    "namespace": validations()[2]["message"],
    "privileged": validations()[3]["message"],
    "node-name": validations()[4]["message"],
    "env-from": validations()[5]["message"],
}


def request_for(
    body: dict[str, Any],
    namespace: str,
    operation: str = "CREATE",
    namespace_object: dict[str, Any] | None = None,
    limit_ranges: list[dict[str, Any]] | None = None,
) -> Request:
    """The request that carries `body`: ephemeral containers arrive as an UPDATE of `pods/ephemeralcontainers`
    (they cannot be set on create), e.g. from `kubectl debug`."""
    ns = namespace_object or NAMESPACES[namespace]
    ranges = LIMIT_RANGES.get(namespace, []) if limit_ranges is None else limit_ranges
    if body["kind"] == "Pod" and body["spec"].get("ephemeralContainers"):
        old = copy.deepcopy(body)
        del old["spec"]["ephemeralContainers"]
        return Request(body, ns, "UPDATE", "ephemeralcontainers", old, ranges)
    return Request(body, ns, operation, "", body if operation == "UPDATE" else None, ranges)


def judge(request: Request, policy: dict[str, Any] | None = None) -> Outcome:
    policy = policy or admission_policy()
    binding = next(o for o in admission_objects() if o["spec"].get("policyName") == policy["metadata"]["name"])
    return apiserver_model.admit(request, policy, binding)


def admit(
    body: dict[str, Any],
    namespace: str,
    operation: str = "CREATE",
    namespace_object: dict[str, Any] | None = None,
    policy: dict[str, Any] | None = None,
    limit_ranges: list[dict[str, Any]] | None = None,
) -> list[str]:
    """Denial messages for a valid `body` (a pod, or a workload with its policy); empty: admitted."""
    outcome = judge(request_for(body, namespace, operation, namespace_object, limit_ranges), policy)
    assert outcome.invalid == [], outcome.invalid
    return outcome.denied


# --- pods ------------------------------------------------------------------------------------------

GPU_TOLERATION = {"key": GPU_TAINT["key"], "operator": "Equal", "value": GPU_TAINT["value"], "effect": "NoSchedule"}
GPU_LIMITS = {"limits": {GPU_RESOURCE: "1"}}


def container(name: str = "main", *, gpu: bool = False, env: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": name, "image": "docker.io/library/python:3.12", **extra}
    if gpu:
        spec["resources"] = GPU_LIMITS
    if env is not None:
        spec["env"] = env
    return spec


def pod(*containers: dict[str, Any], tolerations: list[Any] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": list(containers) or [container()], **spec}
    if tolerations is not None:
        body["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": body}


def visible(value: str) -> list[dict[str, str]]:
    return [{"name": "NVIDIA_VISIBLE_DEVICES", "value": value}]


GPU_POD = pod(container(gpu=True), tolerations=[GPU_TOLERATION])
PRIVILEGED: dict[str, Any] = {"securityContext": {"privileged": True}}

ADMITTED: dict[str, tuple[dict[str, Any], str]] = {
    "plain pod, non-lab": (pod(), "team-apps"),
    "plain pod, lab": (pod(), "vision-lab"),
    "GPU pod in its lab": (GPU_POD, "vision-lab"),
    "GPU pod tolerating by key only (Exists)": (
        pod(container(gpu=True), tolerations=[{"key": GPU_TAINT["key"], "operator": "Exists"}]),
        "vision-lab",
    ),
    "GPU pod with a sidecar that opts out (void)": (
        pod(container(gpu=True), container("sidecar", env=visible("void")), tolerations=[GPU_TOLERATION]),
        "vision-lab",
    ),
    "GPU pod with an init container that opts out (none)": (
        pod(container(gpu=True), tolerations=[GPU_TOLERATION], initContainers=[container("init", env=visible("none"))]),
        "vision-lab",
    ),
    "NVIDIA_VISIBLE_DEVICES=void off GPU nodes": (pod(container(env=visible("void"))), "team-apps"),
    "GPU pod with envFrom under a prefix": (
        pod(
            container(gpu=True, envFrom=[{"prefix": "APP_", "configMapRef": {"name": "settings"}}]),
            tolerations=[GPU_TOLERATION],
        ),
        "vision-lab",
    ),
    "envFrom without a prefix off GPU nodes": (
        pod(container(envFrom=[{"configMapRef": {"name": "settings"}}])),
        "vision-lab",
    ),
    "privileged pod that does not tolerate the GPU taint": (pod(container(**PRIVILEGED)), "team-apps"),
    "key-less Exists for NoExecute only does not tolerate NoSchedule": (
        pod(tolerations=[{"operator": "Exists", "effect": "NoExecute"}]),
        "team-apps",
    ),
    "other taints tolerated": (pod(tolerations=[{"key": "dedicated", "operator": "Exists"}]), "team-apps"),
    "a bound pod is updated (nodeName set by the scheduler)": (pod(nodeName="ip-10-0-0-1"), "team-apps"),
    "system namespace: every GPU, privileged, by hand": (
        pod(
            container(env=visible("all"), envFrom=[{"configMapRef": {"name": "c"}}], **PRIVILEGED),
            tolerations=[{"operator": "Exists"}],
            nodeName="n",
        ),
        SYSTEM_NAMESPACE,
    ),
}
UPDATES = {"a bound pod is updated (nodeName set by the scheduler)"}

DENIED: dict[str, tuple[dict[str, Any], str, set[str]]] = {
    **{
        f"NVIDIA_VISIBLE_DEVICES=all in a container, {ns}": (pod(container(env=visible("all"))), ns, {"env"})
        for ns in NON_SYSTEM
    },
    **{
        f"NVIDIA_VISIBLE_DEVICES by index in an init container, {ns}": (
            pod(initContainers=[container("init", env=visible("0,1"))]),
            ns,
            {"env"},
        )
        for ns in NON_SYSTEM
    },
    "NVIDIA_VISIBLE_DEVICES=all in an ephemeral container of a GPU pod": (
        pod(
            container(gpu=True),
            tolerations=[GPU_TOLERATION],
            ephemeralContainers=[container("debug", env=visible("all"))],
        ),
        "vision-lab",
        {"env", "opt-out"},
    ),
    "NVIDIA_VISIBLE_DEVICES from a ConfigMap (valueFrom)": (
        pod(
            container(
                env=[
                    {
                        "name": "NVIDIA_VISIBLE_DEVICES",
                        "valueFrom": {"configMapKeyRef": {"name": "x", "key": "void"}},
                    }
                ]
            )
        ),
        "team-apps",
        {"env"},
    ),
    "GPU toleration outside a lab": (GPU_POD, "team-apps", {"namespace"}),
    "key-less Exists toleration outside a lab": (
        pod(container(gpu=True), tolerations=[{"operator": "Exists"}]),
        "team-apps",
        {"namespace"},
    ),
    "key-less Exists toleration for NoSchedule outside a lab": (
        pod(container(gpu=True), tolerations=[{"key": "", "operator": "Exists", "effect": "NoSchedule"}]),
        "team-apps",
        {"namespace"},
    ),
    "GPU pod whose container requests no GPU (CUDA image ENV sees all)": (
        pod(container(), tolerations=[GPU_TOLERATION]),
        "vision-lab",
        {"opt-out"},
    ),
    "GPU pod with a sidecar that requests no GPU": (
        pod(container(gpu=True), container("sidecar"), tolerations=[GPU_TOLERATION]),
        "vision-lab",
        {"opt-out"},
    ),
    "GPU pod whose init container requests no GPU": (
        pod(container(gpu=True), tolerations=[GPU_TOLERATION], initContainers=[container("init")]),
        "vision-lab",
        {"opt-out"},
    ),
    "privileged GPU container in a lab": (
        pod(container(gpu=True, **PRIVILEGED), tolerations=[GPU_TOLERATION]),
        "vision-lab",
        {"privileged"},
    ),
    "privileged init container in a GPU pod": (
        pod(
            container(gpu=True),
            tolerations=[GPU_TOLERATION],
            initContainers=[container("init", env=visible("void"), **PRIVILEGED)],
        ),
        "vision-lab",
        {"privileged"},
    ),
    "privileged ephemeral container in a GPU pod": (
        pod(
            container(gpu=True),
            tolerations=[GPU_TOLERATION],
            ephemeralContainers=[container("debug", env=visible("none"), **PRIVILEGED)],
        ),
        "vision-lab",
        {"privileged"},
    ),
    "privileged GPU pod outside a lab: both rules": (
        pod(container(gpu=True, **PRIVILEGED), tolerations=[{"operator": "Exists"}]),
        "team-apps",
        {"namespace", "privileged"},
    ),
    **{f"pod created with nodeName, {ns}": (pod(nodeName="ip-10-0-0-1"), ns, {"node-name"}) for ns in NON_SYSTEM},
    "GPU pod with envFrom and no prefix (a ConfigMap could set NVIDIA_VISIBLE_DEVICES)": (
        pod(container(gpu=True, envFrom=[{"configMapRef": {"name": "settings"}}]), tolerations=[GPU_TOLERATION]),
        "vision-lab",
        {"env-from"},
    ),
    "GPU pod with envFrom prefix NVIDIA_ (from a Secret)": (
        pod(
            container(gpu=True, envFrom=[{"prefix": "NVIDIA_", "secretRef": {"name": "s"}}]),
            tolerations=[GPU_TOLERATION],
        ),
        "vision-lab",
        {"env-from"},
    ),
    "GPU pod with an empty envFrom prefix in an init container": (
        pod(
            container(gpu=True),
            tolerations=[GPU_TOLERATION],
            initContainers=[container("init", gpu=True, envFrom=[{"prefix": "", "configMapRef": {"name": "c"}}])],
        ),
        "vision-lab",
        {"env-from"},
    ),
}


@pytest.mark.parametrize("case", sorted(ADMITTED))
def test_the_guard_admits(case: str) -> None:
    body, namespace = ADMITTED[case]
    assert admit(body, namespace, "UPDATE" if case in UPDATES else "CREATE") == []


@pytest.mark.parametrize("case", sorted(DENIED))
def test_the_guard_denies_with_a_message_that_says_what_to_change(case: str) -> None:
    body, namespace, rules = DENIED[case]
    assert set(admit(body, namespace)) == {MESSAGES[rule] for rule in rules}


def test_the_system_namespace_exemption_is_what_admits_the_system_case() -> None:
    body, _ = ADMITTED["system namespace: every GPU, privileged, by hand"]
    assert set(admit(body, "team-apps")) == set(MESSAGES.values())


def test_updates_are_checked_too() -> None:
    assert admit(pod(container(env=visible("all"))), "vision-lab", "UPDATE") == [MESSAGES["env"]]


# --- a zero GPU limit (issue 22) ----------------------------------------------------------------------

# Every spelling of zero the API server accepts for an extended resource (JSON numbers included).
ZERO_FORMS: list[Any] = [0, "0", 0.0, "0.0", "0m", "0Ki", "0e3", "0E0", "-0", "+0", "00", ".", "0n", "0Mi", "0.000k"]
WHOLE_FORMS: list[Any] = [1, "1", 1.0, "1000m", "1e0", "+1", "0.001k", "1.0"]


def gpu_container(name: str, limit: Any, **extra: Any) -> dict[str, Any]:
    return container(name, resources={"limits": {GPU_RESOURCE: limit}}, **extra)


def _zero_in(position: str, zero: Any, tolerations: list[Any] | None) -> dict[str, Any]:
    """A pod whose `position` holds a container with an `nvidia.com/gpu` limit of `zero`."""
    if position == "containers":
        return pod(gpu_container("main", zero), tolerations=tolerations)
    if position == "sidecar":
        return pod(container(gpu=True), gpu_container("sidecar", zero), tolerations=tolerations)
    return pod(container(gpu=True), tolerations=tolerations, initContainers=[gpu_container("init", zero)])


ZERO_POSITIONS = ("containers", "sidecar", "initContainers")


@pytest.mark.parametrize("zero", ZERO_FORMS, ids=repr)
@pytest.mark.parametrize("position", ZERO_POSITIONS)
@pytest.mark.parametrize("written", ["toleration written", "toleration added by EKS"])
def test_a_zero_gpu_limit_is_denied_in_every_position_and_form(zero: Any, position: str, written: str) -> None:
    tolerations = [GPU_TOLERATION] if written == "toleration written" else None
    outcome = judge(request_for(_zero_in(position, zero, tolerations), "vision-lab"))
    assert outcome.invalid == []  # the API server accepts the quantity: only the guard stands in the way
    assert outcome.denied == [MESSAGES["opt-out"]]


@pytest.mark.parametrize("zero", ZERO_FORMS, ids=repr)
@pytest.mark.parametrize("position", ZERO_POSITIONS)
@pytest.mark.parametrize("wrap", ["deployment", "cron_job"])
def test_a_zero_gpu_limit_in_a_workload_template_is_denied(zero: Any, position: str, wrap: str) -> None:
    """No plugin adds the toleration to a template; the template policy counts the request itself."""
    workload = (deployment if wrap == "deployment" else cron_job)(_zero_in(position, zero, None))
    outcome = judge(request_for(workload, "vision-lab"), workload_admission_policy())
    assert (outcome.invalid, outcome.denied) == ([], [MESSAGES["opt-out"]])


def test_a_zero_gpu_limit_in_an_ephemeral_container_never_reaches_a_node() -> None:
    """The API server refuses resources on ephemeral containers; the guard denies the same pod regardless."""
    body = pod(container(gpu=True), tolerations=[GPU_TOLERATION], ephemeralContainers=[gpu_container("debug", "0")])
    request = request_for(body, "vision-lab")
    outcome = judge(request)
    assert any("Ephemeral Container" in error for error in outcome.invalid)
    policy = admission_policy()
    assert apiserver_model.evaluate_policy(outcome.seen, request, policy, admission_policy_binding()) == [
        MESSAGES["opt-out"]
    ]


@pytest.mark.parametrize("zero", ["0", 0.0, "0m"], ids=repr)
def test_a_zero_gpu_limit_outside_a_lab_is_denied_twice(zero: Any) -> None:
    """The toleration EKS adds makes it a GPU pod, so the namespace rule applies too."""
    assert set(admit(pod(gpu_container("main", zero)), "team-apps")) == {MESSAGES["opt-out"], MESSAGES["namespace"]}


@pytest.mark.parametrize("zero", ["0", "0m"])
def test_a_zero_gpu_limit_that_opts_out_is_admitted(zero: Any) -> None:
    body = pod(container(gpu=True), gpu_container("sidecar", zero, env=visible("void")), tolerations=[GPU_TOLERATION])
    assert admit(body, "vision-lab") == []


@pytest.mark.parametrize("whole", WHOLE_FORMS, ids=repr)
def test_one_whole_gpu_in_any_form_is_a_request(whole: Any) -> None:
    assert admit(pod(gpu_container("main", whole)), "vision-lab") == []
    assert admit(deployment(pod(gpu_container("main", whole))), "vision-lab", policy=workload_admission_policy()) == []


@pytest.mark.parametrize("fraction", ["500m", "0.5", 0.5, "1500m", "-1"], ids=repr)
def test_fractional_or_negative_gpus_are_refused_before_the_guard(fraction: Any) -> None:
    outcome = judge(request_for(pod(gpu_container("main", fraction), tolerations=[GPU_TOLERATION]), "vision-lab"))
    assert outcome.invalid and outcome.denied == []


def test_the_old_rule_admitted_a_zero_gpu_limit() -> None:
    """The bug: `nvidia.com/gpu in limits` alone was the request test, so `"0"` satisfied it."""
    old = admission_policy()
    rule = old["spec"]["validations"][1]
    rule["expression"] = rule["expression"].replace(f" && c.resources.limits['{GPU_RESOURCE}'] != '0'", "")
    assert judge(request_for(_zero_in("containers", "0", [GPU_TOLERATION]), "vision-lab"), old).denied == []


# --- the API-server sequence -----------------------------------------------------------------------


def test_a_gpu_request_without_a_toleration_is_judged_with_the_one_eks_adds() -> None:
    outcome = judge(request_for(pod(container(gpu=True)), "team-apps"))
    tolerations = outcome.seen["spec"]["tolerations"]
    assert {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"} in tolerations
    assert outcome.denied == [MESSAGES["namespace"]]
    # The same manifest as a Deployment: no toleration is added to a template, the request alone counts.
    assert admit(deployment(pod(container(gpu=True))), "team-apps", policy=workload_admission_policy()) == [
        MESSAGES["namespace"]
    ]


def test_the_sequence_defaults_mutates_and_serialises_as_the_api_server() -> None:
    outcome = judge(
        request_for(pod(gpu_container("main", "1000m"), container("cpu-only", env=visible("void"))), "vision-lab")
    )
    main, cpu_only = outcome.seen["spec"]["containers"]
    # Requests default to limits, in the canonical form the policy reads.
    assert main["resources"]["requests"][GPU_RESOURCE] == main["resources"]["limits"][GPU_RESOURCE] == "1"
    # LimitRanger fills the lab's default requests into a container that names none.
    assert cpu_only["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}
    # DefaultTolerationSeconds adds NoExecute tolerations that do not tolerate the GPU taint.
    keys = {t["key"]: t.get("tolerationSeconds") for t in outcome.seen["spec"]["tolerations"]}
    assert keys == {GPU_RESOURCE: None, "node.kubernetes.io/not-ready": 300, "node.kubernetes.io/unreachable": 300}
    assert outcome.denied == []


def test_ephemeral_containers_arrive_as_an_update_of_the_subresource() -> None:
    body = pod(
        container(gpu=True),
        tolerations=[GPU_TOLERATION],
        ephemeralContainers=[container("debug", env=visible("void"))],
    )
    assert any("cannot be set on create" in error for error in judge(Request(body, LAB)).invalid)
    request = request_for(body, "vision-lab")
    assert (request.operation, request.subresource) == ("UPDATE", "ephemeralcontainers")
    assert judge(request).admitted


def test_lab_members_legitimate_pods_pass() -> None:
    notebook = pod(
        container(
            "notebook",
            image="quay.io/jupyter/pytorch-notebook:cuda12-2025-08-18",
            resources={"limits": {GPU_RESOURCE: "1"}, "requests": {"memory": "4Gi"}},
        )
    )
    trainer = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [gpu_container("train", 1), container("metrics", env=visible("void"))],
                    "initContainers": [container("fetch-data", env=visible("none"))],
                }
            }
        },
    }
    cpu_only = pod(container("pre-process", resources={"requests": {"cpu": "2", "memory": "1Gi"}}))
    assert admit(notebook, "vision-lab") == []
    assert admit(trainer, "vision-lab", policy=workload_admission_policy()) == []
    assert admit(_pod_of(trainer), "vision-lab") == []
    assert admit(cpu_only, "vision-lab") == []


# --- the platform's own pods ---------------------------------------------------------------------


def _pod_of(workload: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": workload["spec"]["template"]["spec"]}


@pytest.mark.parametrize("strategy", ["time-slicing", "mps"])
def test_device_plugin_and_mps_daemon_pass_in_their_namespace_and_only_there(strategy: str) -> None:
    objects = device_plugin_objects(GpuSharingSettings(strategy=strategy, replicas=4))
    daemon_sets = objects.daemon_sets
    assert any("mps" in ds["metadata"]["name"] for ds in daemon_sets) == (strategy == "mps")
    for daemon_set in daemon_sets:
        assert daemon_set["metadata"]["namespace"] in PLATFORM_SYSTEM_NAMESPACES
        assert admit(_pod_of(daemon_set), daemon_set["metadata"]["namespace"]) == []
        # They use every GPU on purpose: the same pods anywhere else are denied.
        assert admit(_pod_of(daemon_set), "vision-lab") != []


@pytest.fixture(scope="module")
def settings() -> dict[str, StackSettings]:
    return {stack: settings_for(stack) for stack in STACKS}


def test_every_daemon_set_and_the_demo_in_both_plans_pass(plans: dict[str, Plan]) -> None:
    for stack, plan in plans.items():
        assert plan.objects("DaemonSet"), stack
        created = {ns["metadata"]["name"]: ns for ns in plan.objects("Namespace")}
        for workload in plan.objects("DaemonSet") + plan.objects("Deployment"):
            name = workload["metadata"]["namespace"]
            namespace = created.get(name, {"metadata": {"name": name, "labels": {}}})
            ranges = [r for r in plan.objects("LimitRange") if r["metadata"]["namespace"] == name]
            pod_denied = admit(_pod_of(workload), name, namespace_object=namespace, limit_ranges=ranges)
            assert pod_denied == [], (stack, workload["metadata"])
            policy = workload_admission_policy()
            denied = admit(workload, name, namespace_object=namespace, policy=policy, limit_ranges=ranges)
            assert denied == [], (stack, workload["metadata"])


def test_the_demo_pods_pass_in_their_lab(settings: dict[str, StackSettings]) -> None:
    demo = settings["staging"].demo
    deployment = demo_deployment(demo)
    assert admit(_pod_of(deployment), "vision-lab") == []
    assert admit(_pod_of(deployment), "team-apps") == [MESSAGES["namespace"]]


# --- the objects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_policy_and_binding_are_strict_valid(version: str) -> None:
    assert validate_core_object(admission_policy(), version) == []
    assert validate_core_object(admission_policy_binding(), version) == []


def test_policy_denies_and_fails_closed() -> None:
    policy, binding = admission_policy(), admission_policy_binding()
    assert policy["spec"]["failurePolicy"] == "Fail"
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert set(rule["operations"]) == {"CREATE", "UPDATE"}
    assert set(rule["resources"]) == {"pods", "pods/ephemeralcontainers"}


def test_both_plans_carry_the_guard(plans: dict[str, Plan]) -> None:
    expected = admission_objects()
    for stack, plan in plans.items():
        found = plan.objects("ValidatingAdmissionPolicy") + plan.objects("ValidatingAdmissionPolicyBinding")
        assert sorted(found, key=str) == sorted(expected, key=str), stack
        bindings = {r["inputs"]["metadata"]["name"]: r for r in plan.of_type(BINDING_TYPE)}
        for policy in plan.of_type(POLICY_TYPE):
            assert policy["urn"] in bindings[policy["inputs"]["metadata"]["name"]]["dependencies"]


# --- workload controllers --------------------------------------------------------------------------


def deployment(body: dict[str, Any]) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": body["spec"]}
    spec = {"selector": {"matchLabels": {"app": "x"}}, "template": template}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


def cron_job(body: dict[str, Any]) -> dict[str, Any]:
    job = {"template": {"spec": {**body["spec"], "restartPolicy": "Never"}}}
    spec = {"schedule": "@daily", "jobTemplate": {"spec": job}}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c"}, "spec": spec}


# Ephemeral containers and bound pods exist only on pods, never in templates.
TEMPLATE_DENIED = sorted(c for c in DENIED if "ephemeral" not in c)
TEMPLATE_ADMITTED = sorted(c for c in ADMITTED if c not in UPDATES)


@pytest.mark.parametrize("wrap", [deployment, cron_job])
@pytest.mark.parametrize("case", TEMPLATE_DENIED)
def test_workload_templates_are_denied_like_pods(case: str, wrap: Any) -> None:
    body, namespace, rules = DENIED[case]
    denied = admit(wrap(body), namespace, policy=workload_admission_policy())
    assert set(denied) == {MESSAGES[rule] for rule in rules}


@pytest.mark.parametrize("wrap", [deployment, cron_job])
@pytest.mark.parametrize("case", TEMPLATE_ADMITTED)
def test_workload_templates_are_admitted_like_pods(case: str, wrap: Any) -> None:
    body, namespace = ADMITTED[case]
    assert admit(wrap(body), namespace, policy=workload_admission_policy()) == []


def test_workload_policy_covers_the_controllers() -> None:
    rules = workload_admission_policy()["spec"]["matchConstraints"]["resourceRules"]
    covered = {(group, resource) for rule in rules for group in rule["apiGroups"] for resource in rule["resources"]}
    assert covered == {
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
    }


@pytest.mark.parametrize("version", ["1.34", "1.35", "1.36"])
def test_every_guard_object_is_strict_valid(version: str) -> None:
    for obj in admission_objects():
        assert validate_core_object(obj, version) == [], obj["metadata"]["name"]


def test_lab_namespaces_are_gpu_enabled() -> None:
    assert LAB["metadata"]["labels"][GPU_ENABLED_NAMESPACE_LABEL] == "true"
    assert GPU_ENABLED_NAMESPACE_LABEL not in OTHER["metadata"]["labels"]
