"""The learning-lab demo: valid objects, on GPU nodes, restricted security, and it fits on one shared GPU."""

from __future__ import annotations

from typing import Any

import pytest

from components.demo import demo_placement
from components.facts import gpu_catalog
from components.facts.constants import (
    GPU_RESOURCE,
    GPU_TAINT,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    gpu_node_labels,
)
from components.facts.jupyterhub_chart import NOTEBOOK_POD
from components.renderers.hub.hub_namespace import lab_side_policies
from components.renderers.labs.demo_manifests import (
    DEMO_CHECKOV_SKIPS,
    demo_deployment,
    demo_namespace,
    demo_network_policy,
    place_demo_deployment,
)
from components.renderers.labs.lab_manifests import lab_namespace, lab_network_policies
from components.settings import RESERVED_NAMESPACES, SettingsError, StackSettings
from offline.plan import Plan
from tests.support.checkov_allowlist import SKIPPABLE_CHECKS
from tests.support.k8s_validation import (
    containers_of,
    deny_all_problems,
    pod_can_land_on,
    selector_problems,
    selects,
    skip_reasons,
    tolerates,
    unmounted_volume_problems,
    validate_core_object,
)
from tests.support.settings import settings_for

STAGING = settings_for("staging")
# Volume types the `restricted` Pod Security Standard allows.
# checkov CKV_K8S_40: a UID this high never coincides with a user of the host.
HIGH_UID = 10000
RESTRICTED_VOLUME_TYPES = {
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
}  # fmt: skip


def pod_spec(deployment: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = deployment["spec"]["template"]["spec"]
    return spec


def gpus_per_pod(deployment: dict[str, Any]) -> int:
    return sum(
        int(c.get("resources", {}).get("limits", {}).get(GPU_RESOURCE, 0)) for c in pod_spec(deployment)["containers"]
    )


def test_staging_runs_the_demo() -> None:
    assert STAGING.demo.enabled


def test_demo_objects_validate_strictly() -> None:
    for obj in (
        demo_namespace(STAGING.demo, STAGING.kubernetes_version),
        demo_deployment(STAGING.demo),
        demo_network_policy(STAGING.demo),
    ):
        assert validate_core_object(obj, STAGING.kubernetes_version) == []


def test_demo_pods_get_no_network() -> None:
    deployment, policy = demo_deployment(STAGING.demo), demo_network_policy(STAGING.demo)
    assert policy["metadata"]["namespace"] == "learning-lab"  # Pulumi.staging.yaml demo.namespace
    assert deny_all_problems(policy, deployment) == []
    # Only the demo's pods: not the device plugin's (another namespace anyway) nor unlabelled pods.
    assert not selects(
        policy, {"app.kubernetes.io/part-of": deployment["metadata"]["labels"]["app.kubernetes.io/part-of"]}
    )


def test_demo_carries_its_checkov_skips_with_reasons() -> None:
    deployment = demo_deployment(STAGING.demo)
    skips = skip_reasons(deployment)
    assert skips == dict(DEMO_CHECKOV_SKIPS)
    assert set(skips) <= set(SKIPPABLE_CHECKS)
    assert all(len(reason.split()) >= 4 for reason in skips.values()), skips
    # The config may pin by tag, so the digest check is skipped; a tag alone still has to be an explicit one.
    assert "CKV_K8S_43" in skips and not STAGING.demo.image.endswith(":latest")


def test_demo_pods_each_request_one_gpu_and_run_the_pinned_image() -> None:
    deployment = demo_deployment(STAGING.demo)
    # As Pulumi.staging.yaml's demo block states them.
    assert deployment["metadata"]["namespace"] == "learning-lab"
    assert deployment["spec"]["replicas"] == 3
    assert selector_problems(deployment) == []
    assert unmounted_volume_problems(pod_spec(deployment)) == []
    (container,) = pod_spec(deployment)["containers"]
    assert container["image"] == "docker.io/tensorflow/tensorflow:2.12.0-gpu"
    assert container["resources"]["limits"][GPU_RESOURCE] == "1"
    assert gpus_per_pod(deployment) == 1
    assert {"cpu", "memory"} <= set(container["resources"]["requests"]) & set(container["resources"]["limits"])
    # It proves GPU access before it idles: TensorFlow lists the GPUs and the pod fails without one.
    script = container["command"][-1]
    assert "list_physical_devices('GPU')" in script and "SystemExit(0 if gpus else 1)" in script
    assert script.index("list_physical_devices") < script.index("sleep")


def test_demo_pods_go_to_gpu_nodes_only() -> None:
    spec = pod_spec(demo_deployment(STAGING.demo))
    assert any(tolerates(t, GPU_TAINT) for t in spec["tolerations"])
    for sharing in STAGING.sharing_profiles:
        assert pod_can_land_on(spec, gpu_node_labels(sharing.profile))
    assert not pod_can_land_on(spec, {SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE})


def test_demo_meets_the_restricted_pod_security_standard_its_namespace_enforces() -> None:
    namespace = demo_namespace(STAGING.demo, STAGING.kubernetes_version)
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels["pod-security.kubernetes.io/enforce-version"] == f"v{STAGING.kubernetes_version}"
    spec = pod_spec(demo_deployment(STAGING.demo))
    pod_security = spec["securityContext"]
    assert pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] != 0
    assert pod_security["runAsUser"] >= HIGH_UID and pod_security["runAsGroup"] >= HIGH_UID
    assert pod_security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not {"hostNetwork", "hostPID", "hostIPC"} & set(spec)
    for volume in spec["volumes"]:
        assert set(volume) - {"name"} <= RESTRICTED_VOLUME_TYPES
    for container in containers_of(spec):
        security = container["securityContext"]
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security.get("privileged", False) is False
        # A deliberate, explained exception: the NVIDIA runtime's hooks write into the container root
        # (manifest_helpers.GPU_CONTAINER_READ_ONLY_ROOT says why).
        assert security["readOnlyRootFilesystem"] is False
        assert security.get("runAsUser", pod_security["runAsUser"]) != 0
    assert spec["automountServiceAccountToken"] is False


def demo_fits_one_managed_node(settings: StackSettings, deployment: dict[str, Any]) -> bool:
    """Demo pods x GPUs each <= physical GPUs of one managed GPU node x sharing replicas (smallest type)."""
    physical = min(gpu_catalog.gpu_count(t) for t in settings.gpu_node_group.instance_types)
    return deployment["spec"]["replicas"] * gpus_per_pod(deployment) <= physical * settings.gpu_sharing.replicas


def test_the_demo_fits_on_one_shared_gpu() -> None:
    """Staging: 3 pods x 1 GPU on one g4dn.xlarge (1 T4) shared 3 ways."""
    assert demo_fits_one_managed_node(STAGING, demo_deployment(STAGING.demo))
    assert [gpu_catalog.gpu_count(t) for t in STAGING.gpu_node_group.instance_types] == [1]
    # The check is not vacuous: one more pod would not fit.
    bigger = STAGING.demo.model_copy(update={"replicas": STAGING.demo.replicas + 1})
    assert not demo_fits_one_managed_node(STAGING, demo_deployment(bigger))


# --- plan ------------------------------------------------------------------------------------------


def test_staging_plan_has_the_demo_after_the_device_plugin(staging_plan: Plan) -> None:
    (deployment,) = staging_plan.objects("Deployment")
    (namespace,) = [ns for ns in staging_plan.objects("Namespace") if ns["metadata"]["name"] == STAGING.demo.namespace]
    assert deployment == place_demo_deployment(demo_deployment(STAGING.demo), demo_placement(STAGING))
    # Staging's demo runs in a lab: the lab's namespace, not one of its own.
    (lab,) = [lab for lab in STAGING.labs if lab.name == STAGING.demo.namespace]
    assert namespace == lab_namespace(lab, STAGING.kubernetes_version)
    assert demo_fits_one_managed_node(STAGING, deployment)
    (resource,) = staging_plan.of_type("kubernetes:apps/v1:Deployment")
    (component,) = staging_plan.of_type("gpu-platform:demo:DemoWorkload")
    assert resource["parent"] == component["urn"]
    (plugin,) = staging_plan.of_type("gpu-platform:gpu:DevicePlugin")
    daemon_sets = {
        r["urn"] for r in staging_plan.of_type("kubernetes:apps/v1:DaemonSet") if r["parent"] == plugin["urn"]
    }
    assert daemon_sets and daemon_sets <= set(resource["dependencies"])


def test_staging_demo_in_its_lab_gets_the_labs_network_policies_only(staging_plan: Plan) -> None:
    """The demo runs in the lab `learning-lab`: the lab's policies select all its pods (NetworkPolicies are
    additive, so a deny-all beside them would deny nothing) and the demo adds none of its own."""
    (component,) = staging_plan.of_type("gpu-platform:demo:DemoWorkload")
    owned = [
        r
        for r in staging_plan.of_type("kubernetes:networking.k8s.io/v1:NetworkPolicy")
        if r["parent"] == component["urn"]
    ]
    assert owned == []
    assert demo_network_policy(STAGING.demo) not in staging_plan.objects("NetworkPolicy")
    (lab,) = [lab for lab in STAGING.labs if lab.name == STAGING.demo.namespace]
    in_namespace = [p for p in staging_plan.objects("NetworkPolicy") if p["metadata"]["namespace"] == lab.name]
    # The lab's hub (in `<lab>-hub`) adds traffic to and from the notebooks alone (renderers/hub/hub_namespace), never
    # for the demo; its GPU idle reaper's egress policy selects the hub pod, in the hub's namespace.
    hub_side = [p for p in in_namespace if p in lab_side_policies(lab)]
    assert [p["spec"]["podSelector"] for p in hub_side] == [{"matchLabels": dict(NOTEBOOK_POD)}] * 2
    deployments = [d for d in staging_plan.objects("Deployment") if d["metadata"]["namespace"] == lab.name]
    assert deployments  # the demo's
    for deployment in deployments:
        assert not NOTEBOOK_POD.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    in_namespace = [p for p in in_namespace if p not in hub_side]
    assert sorted(in_namespace, key=str) == sorted(lab_network_policies(lab), key=str)
    assert all(p["spec"]["podSelector"] == {} for p in in_namespace)


def test_prod_plan_has_no_demo(prod_plan: Plan) -> None:
    demo = settings_for("prod").demo
    assert not demo.enabled
    assert prod_plan.objects("Deployment") == []
    assert all(p["metadata"]["namespace"] != demo.namespace for p in prod_plan.objects("NetworkPolicy"))
    assert prod_plan.of_type("gpu-platform:demo:DemoWorkload") == []
    assert all(ns["metadata"]["name"] != demo.namespace for ns in prod_plan.objects("Namespace"))


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_demo_setting_decides(stack: str, plans: dict[str, Plan]) -> None:
    enabled = settings_for(stack).demo.enabled
    assert bool(plans[stack].of_type("gpu-platform:demo:DemoWorkload")) is enabled


@pytest.mark.parametrize("namespace", RESERVED_NAMESPACES)
def test_the_demo_never_takes_over_a_cluster_namespace(namespace: str) -> None:
    with pytest.raises(SettingsError) as raised:
        settings_for("staging", demo={"enabled": True, "namespace": namespace})
    assert [path for path, _ in raised.value.problems] == ["gpu-platform:demo.namespace"]
