"""The GPU admission guard: a ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) and its binding.

Nobody may bypass GPU sharing. Outside the platform's own system namespaces (where the device plugin
and the MPS daemon legitimately use every GPU) it denies, on pod CREATE and UPDATE (ephemeral
containers arrive as an UPDATE of `pods/ephemeralcontainers`):
- any container (init and ephemeral too) that sets `NVIDIA_VISIBLE_DEVICES` to anything but
  `void`/`none`: the device plugin assigns GPUs, nobody picks them by hand;
- in GPU pods, any container that neither requests at least one whole `nvidia.com/gpu` nor opts out
  with `NVIDIA_VISIBLE_DEVICES=void`/`none`: CUDA images bake `NVIDIA_VISIBLE_DEVICES=all` into their
  ENV, so such a container would see every GPU of the node through the NVIDIA runtime. A limit of `0`
  is no request: the kubelet asks the device plugin for nothing, the plugin sets no variable, and the
  quota is charged nothing (docs/gpu-guard.md);
- GPU pods in a namespace without the GPU-enabled label;
- privileged containers in GPU pods;
- pods created with `spec.nodeName`, which skips the scheduler and with it the GPU taint;
- in GPU pods, `envFrom` without a prefix, or with one that
  `NVIDIA_VISIBLE_DEVICES` starts with: a ConfigMap or Secret the user writes could otherwise set it
  (admission cannot read their data), after the device plugin's value.

A GPU pod is one that tolerates the GPU taint (key `nvidia.com/gpu`, or a key-less `Exists`) or names
`nvidia.com/gpu` in any container's resources, in any quantity: EKS runs the `ExtendedResourceToleration`
admission plugin, which adds the GPU toleration to such a pod before the policy runs, and never to a
workload's template, so the template policy must count the request itself.

A second policy applies the same rules to the pod templates of workload controllers (Deployments,
Jobs, CronJobs, ...), so a bad manifest is refused when it is applied, not later in a ReplicaSet's events.
The CEL is rendered here as plain strings and evaluated offline by the tests.
"""

from __future__ import annotations

from typing import Any

from components.facts.constants import (
    GPU_ENABLED_NAMESPACE_LABEL,
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    GPU_TAINT_KEY,
    PLATFORM_SYSTEM_NAMESPACES,
    PROJECT,
)

Manifest = dict[str, Any]

POLICY_NAME = "gpu-platform-gpu-guard"
VISIBLE_DEVICES_ENV = "NVIDIA_VISIBLE_DEVICES"
# Values with which the NVIDIA container runtime exposes no GPU device (`none` still mounts the driver
# libraries, `void` nothing): NVIDIA/nvidia-container-toolkit v1.20.0 internal/config/image/devices.go.
NO_GPU_VALUES = ("void", "none")
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
# Every rule reads the pod spec through this variable: the pod's own, or a controller's pod template.
POD_SPEC = "variables.podSpec"
# Whether the pod is bound for GPU nodes (`gpu_pod()`), computed once per request.
GPU_POD = "variables.gpuPod"
POD_SPEC_OF_POD = "object.spec"
POD_SPEC_OF_TEMPLATE = (
    "object.kind == 'CronJob' ? object.spec.jobTemplate.spec.template.spec : object.spec.template.spec"
)
# Controllers are checked too, so `kubectl apply` of a bad Deployment fails at once instead of
# leaving a ReplicaSet that cannot create pods; pods stay the enforcement point.
WORKLOAD_RULES = (
    ("apps", ("deployments", "replicasets", "statefulsets", "daemonsets")),
    ("batch", ("jobs", "cronjobs")),
)

_NO_GPU_LITERAL = "[" + ", ".join(f"'{value}'" for value in NO_GPU_VALUES) + "]"
# An env entry that opts out of GPUs: a literal void/none (valueFrom could say anything).
_OPTS_OUT = f"e.name == '{VISIBLE_DEVICES_ENV}' && has(e.value) && e.value in {_NO_GPU_LITERAL}"


def _every_container(condition: str) -> str:
    """`condition` (about `c`) holds for every container, init and ephemeral container of the pod."""
    return " && ".join(
        f"(!has({POD_SPEC}.{field}) || {POD_SPEC}.{field}.all(c, {condition}))" for field in CONTAINER_LISTS
    )


def tolerates_gpu_taint() -> str:
    """True when some toleration matches the GPU taint, as the scheduler matches them."""
    key_matches = f"((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists') || (has(t.key) && t.key == '{GPU_TAINT_KEY}')"
    effect_matches = f"(!has(t.effect) || t.effect == '' || t.effect == '{GPU_TAINT_EFFECT}')"
    return f"has({POD_SPEC}.tolerations) && {POD_SPEC}.tolerations.exists(t, ({key_matches}) && {effect_matches})"


def _gpu_enabled_namespace() -> str:
    labels = "namespaceObject.metadata.labels"
    return (
        f"has(namespaceObject.metadata.labels) && '{GPU_ENABLED_NAMESPACE_LABEL}' in {labels} && "
        f"{labels}['{GPU_ENABLED_NAMESPACE_LABEL}'] == 'true'"
    )


def _requests_whole_gpu() -> str:
    """`c` has an `nvidia.com/gpu` limit of at least one whole GPU.

    Limits say it all: the API server's field validation, which runs before any validating admission
    policy, requires an extended resource's request to equal its limit and to be a whole number >= 0
    (kubernetes/kubernetes `pkg/apis/core/validation/validation.go`, `validateResourceQuantityValue`).
    The policy sees the quantity as `Quantity.String()`, which is `"0"` for every zero whatever was
    written (`0`, `0.0`, `"0m"`, `"0Ki"`, `"0e3"`: `CanonicalizeBytes` in
    `staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go`), so a string comparison is exact and
    needs no `quantity()` library (which the offline CEL engine lacks; tests/support/apiserver_model.py).
    """
    limits = "c.resources.limits"
    return f"has(c.resources) && has({limits}) && '{GPU_RESOURCE}' in {limits} && {limits}['{GPU_RESOURCE}'] != '0'"


def _names_gpu_resource() -> str:
    """`c` names `nvidia.com/gpu` in its limits or requests, in any quantity (0 included)."""
    return " || ".join(
        f"(has(c.resources) && has(c.resources.{kind}) && '{GPU_RESOURCE}' in c.resources.{kind})"
        for kind in ("limits", "requests")
    )


def gpu_pod() -> str:
    """True for a pod bound for GPU nodes: it tolerates the GPU taint, or requests `nvidia.com/gpu` at all.

    EKS enables `ExtendedResourceToleration` (awsdocs/amazon-eks-user-guide, platform versions), which adds
    `{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}` to every pod with that resource in a
    container's or init container's requests, whatever the quantity (kubernetes/kubernetes
    `plugin/pkg/admission/extendedresourcetoleration/admission.go`). It never touches a workload's template,
    so the request is counted here too: both policies then judge the pod the API server will create.
    """
    requests = " || ".join(
        f"(has({POD_SPEC}.{field}) && {POD_SPEC}.{field}.exists(c, {_names_gpu_resource()}))"
        for field in ("containers", "initContainers")
    )
    return f"({tolerates_gpu_taint()}) || {requests}"


def _not_privileged() -> str:
    return "!has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged"


def _env_from_cannot_set_visible_devices() -> str:
    return (
        f"!has(c.envFrom) || c.envFrom.all(f, has(f.prefix) && f.prefix != '' && "
        f"!'{VISIBLE_DEVICES_ENV}'.startsWith(f.prefix))"
    )


def validations() -> list[Manifest]:
    """The rules, each with a message that says what to change."""
    tolerates = GPU_POD
    no_env_pick = f"!has(c.env) || c.env.all(e, e.name != '{VISIBLE_DEVICES_ENV}' || ({_OPTS_OUT}))"
    opts_out = f"has(c.env) && c.env.exists(e, {_OPTS_OUT})"
    values = "/".join(NO_GPU_VALUES)
    return [
        {
            "expression": _every_container(no_env_pick),
            "message": f"{VISIBLE_DEVICES_ENV} may only be set to {values}: request {GPU_RESOURCE} in "
            "resources.limits and the device plugin assigns the GPUs",
            "reason": "Forbidden",
        },
        {
            "expression": f"!({tolerates}) || ({_every_container(f'({_requests_whole_gpu()}) || ({opts_out})')})",
            "message": f"in a GPU pod every container must request at least one {GPU_RESOURCE} in "
            f"resources.limits or set {VISIBLE_DEVICES_ENV}={NO_GPU_VALUES[0]} (CUDA images otherwise see every "
            f"GPU of the node; a limit of 0 requests none and is charged nothing)",
            "reason": "Forbidden",
        },
        {
            "expression": f"!({tolerates}) || ({_gpu_enabled_namespace()})",
            "message": f"this namespace is not GPU-enabled: run GPU pods in a lab namespace (label "
            f"{GPU_ENABLED_NAMESPACE_LABEL}=true, set by gpu-platform:labs), or drop the {GPU_TAINT_KEY} toleration "
            f"and every {GPU_RESOURCE} request (EKS adds that toleration to any pod requesting {GPU_RESOURCE})",
            "reason": "Forbidden",
        },
        {
            "expression": f"!({tolerates}) || ({_every_container(_not_privileged())})",
            "message": "privileged containers may not run on GPU nodes: remove securityContext.privileged "
            "from this GPU pod",
            "reason": "Forbidden",
        },
        {
            # Pods: on CREATE only (the scheduler's binding sets nodeName later); templates: always.
            "expression": f"(object.kind == 'Pod' && request.operation != 'CREATE') || !has({POD_SPEC}.nodeName) "
            f"|| {POD_SPEC}.nodeName == ''",
            "message": "spec.nodeName skips the scheduler and the GPU taint: use nodeSelector or affinity instead",
            "reason": "Forbidden",
        },
        {
            "expression": f"!({tolerates}) || ({_every_container(_env_from_cannot_set_visible_devices())})",
            "message": f"in a GPU pod, envFrom needs a prefix (one that "
            f"{VISIBLE_DEVICES_ENV} does not start with, e.g. APP_): a ConfigMap or Secret could otherwise set "
            f"{VISIBLE_DEVICES_ENV}",
            "reason": "Forbidden",
        },
    ]


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/part-of": PROJECT, "app.kubernetes.io/managed-by": "pulumi"}


def exempt_namespace_selector() -> Manifest:
    """Every namespace but the platform's system namespaces (the apiserver sets kubernetes.io/metadata.name)."""
    return {
        "matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(PLATFORM_SYSTEM_NAMESPACES)}
        ]
    }


def _policy(name: str, pod_spec: str, resource_rules: list[Manifest]) -> Manifest:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"namespaceSelector": exempt_namespace_selector(), "resourceRules": resource_rules},
            "variables": [
                {"name": POD_SPEC.removeprefix("variables."), "expression": pod_spec},
                {"name": GPU_POD.removeprefix("variables."), "expression": gpu_pod()},
            ],
            "validations": validations(),
        },
    }


def _binding(policy: Manifest) -> Manifest:
    name = policy["metadata"]["name"]
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            # Repeated on the binding: the exemption holds even if the policy is edited.
            "matchResources": {"namespaceSelector": exempt_namespace_selector()},
        },
    }


def admission_policy() -> Manifest:
    """Pods, including ephemeral containers (an UPDATE of `pods/ephemeralcontainers`)."""
    rule = {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["pods", "pods/ephemeralcontainers"],
    }
    return _policy(POLICY_NAME, POD_SPEC_OF_POD, [rule])


def workload_admission_policy() -> Manifest:
    """The same rules on the pod templates of workload controllers."""
    rules = [
        {"apiGroups": [group], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": list(resources)}
        for group, resources in WORKLOAD_RULES
    ]
    return _policy(f"{POLICY_NAME}-workloads", POD_SPEC_OF_TEMPLATE, rules)


def admission_objects() -> list[Manifest]:
    """Both policies, each followed by its binding."""
    policies = [admission_policy(), workload_admission_policy()]
    return [obj for policy in policies for obj in (policy, _binding(policy))]


def admission_policy_binding() -> Manifest:
    return _binding(admission_policy())
