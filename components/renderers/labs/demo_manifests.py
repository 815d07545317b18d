"""The learning-lab demo workload (pure renderer): its namespace, Deployment and deny-all NetworkPolicy (only in
its own namespace: in a lab the lab's NetworkPolicies apply, and policies are additive), where its pods run, and why `pulumi up` does not wait for them.

Two rules keep the demo from holding `up` or buying GPUs twice:
- `pulumi.com/skipAwait`: pulumi-kubernetes otherwise waits (10 minutes by default) for every replica
  to become Available, i.e. for a GPU node to boot and a multi-GB image to pull. Chosen over a longer
  custom timeout: any timeout still holds `up` for the boot + pull minutes, and turns a capacity
  problem the demo cannot fix (no quota, no g4dn in the zone) into a failed `up` of the whole platform.
- With the managed GPU group enabled the pods go to its node(s): required affinity when the group's
  desired nodes have the slots for every replica (Karpenter cannot provide the node-group label, so it
  never launches a node for them), preferred affinity when they do not (Karpenter adds the rest).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.facts.constants import (
    DEMO_POD_REQUESTS,
    DO_NOT_DISRUPT_ANNOTATION,
    EKS_NODE_GROUP_LABEL_KEY,
    GPU_ENABLED_NAMESPACE_LABEL,
    GPU_LABEL_KEY,
    GPU_LABEL_VALUE,
    GPU_RESOURCE,
    GPU_TOLERATION,
    PROJECT,
    managed_gpu_node_group_name,
)
from components.renderers.manifest_helpers import (
    GPU_CONTAINER_READ_ONLY_ROOT,
    Manifest,
    checkov_skip_annotations,
    deny_all_network_policy,
    plain_manifest,
)
from components.settings import DemoSettings, LabSettings, ResolvedPool

DEMO_APP = "learning-lab"
DEMO_GPUS_PER_POD = 1
DEMO_RESOURCES = {
    "requests": dict(DEMO_POD_REQUESTS),
    # Extended resources are set as limits only; the request defaults to the limit.
    "limits": {"cpu": "1", "memory": "2Gi", GPU_RESOURCE: str(DEMO_GPUS_PER_POD)},
}
# Non-root: the TensorFlow image sets no USER but runs under any uid (its docs suggest `-u`); the NVIDIA
# device nodes keep the driver's default mode 0666 (NVreg_DeviceFileMode), so GPU access needs neither
# root nor a capability. The uid has no home in the image: HOME points at a small emptyDir. Above 10000
# so it never coincides with a user of the host (a container escape would not land on a real account).
DEMO_UID = 10001
# Exit non-zero without a GPU (CrashLoopBackOff makes a broken plugin visible), else idle.
DEMO_SCRIPT = (
    "python -c \"import tensorflow as tf; gpus = tf.config.list_physical_devices('GPU'); "
    "print('GPUs visible:', gpus); raise SystemExit(0 if gpus else 1)\" && exec sleep infinity"
)


# checkov checks the demo Deployment skips (see device_plugin_manifests.PLUGIN_CHECKOV_SKIPS).
DEMO_CHECKOV_SKIPS: Mapping[str, str] = {
    "CKV_K8S_8": "no endpoint: exits non-zero when no GPU is visible (CrashLoopBackOff), then only sleeps",
    "CKV_K8S_9": "no Service sends it traffic; readiness would gate nothing",
    "CKV_K8S_22": "GPU container: NVIDIA runtime hooks write into its root filesystem (nvidia-container-toolkit#2026)",
    "CKV_K8S_15": "image is pre-pulled onto GPU nodes by the userData (gpuNodes.prePullImages); pinned tag",
    "CKV_K8S_43": "image comes from stack config demo.image, which accepts a pinned tag or a digest",
}


def demo_namespace(demo: DemoSettings, kubernetes_version: str) -> Manifest:
    """The demo's namespace enforces the `restricted` Pod Security Standard of the cluster's version."""
    return plain_manifest(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": demo.namespace,
                "labels": {
                    "app.kubernetes.io/part-of": PROJECT,
                    "pod-security.kubernetes.io/enforce": "restricted",
                    "pod-security.kubernetes.io/enforce-version": f"v{kubernetes_version}",
                    # The GPU admission guard admits GPU pods only in GPU-enabled namespaces.
                    GPU_ENABLED_NAMESPACE_LABEL: "true",
                },
            },
        }
    )


def demo_deployment(demo: DemoSettings) -> Manifest:
    """Pods that each request one (shared) GPU, prove TensorFlow sees it, then sleep."""
    selector = {"app.kubernetes.io/name": DEMO_APP}
    labels = {**selector, "app.kubernetes.io/part-of": PROJECT, "app.kubernetes.io/managed-by": "pulumi"}
    return plain_manifest(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": DEMO_APP,
                "namespace": demo.namespace,
                "labels": labels,
                "annotations": checkov_skip_annotations(DEMO_CHECKOV_SKIPS),
            },
            "spec": {
                "replicas": demo.replicas,
                "selector": {"matchLabels": selector},
                # The pods fill the node's GPU slots: replace one at a time instead of surging into a new GPU node.
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "automountServiceAccountToken": False,
                        "enableServiceLinks": False,
                        # `sleep` as PID 1 ignores SIGTERM: do not wait the default 30 s for it.
                        "terminationGracePeriodSeconds": 5,
                        "securityContext": {
                            "runAsNonRoot": True,
                            "runAsUser": DEMO_UID,
                            "runAsGroup": DEMO_UID,
                            "seccompProfile": {"type": "RuntimeDefault"},
                        },
                        "nodeSelector": {GPU_LABEL_KEY: GPU_LABEL_VALUE},
                        "tolerations": [dict(GPU_TOLERATION)],
                        "containers": [
                            {
                                "name": "tensorflow",
                                "image": demo.image,
                                "imagePullPolicy": "IfNotPresent",
                                "command": ["/bin/sh", "-c", DEMO_SCRIPT],
                                "env": [
                                    {"name": "HOME", "value": "/tmp"},
                                    # Time-slicing has no memory isolation: never grab the whole GPU memory up front.
                                    {"name": "TF_FORCE_GPU_ALLOW_GROWTH", "value": "true"},
                                ],
                                "resources": DEMO_RESOURCES,
                                "securityContext": {
                                    "allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": GPU_CONTAINER_READ_ONLY_ROOT,
                                    "runAsNonRoot": True,
                                    "capabilities": {"drop": ["ALL"]},
                                },
                                "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                            }
                        ],
                        "volumes": [{"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}}],
                    },
                },
            },
        }
    )


def demo_network_policy(demo: DemoSettings) -> Manifest:
    """The demo pods need no network at all: TensorFlow only looks for local GPUs."""
    return deny_all_network_policy(demo_deployment(demo))


# pulumi-kubernetes skips its readiness await for objects carrying this annotation: the Deployment
# is created and `up` moves on (pulumi/pulumi-kubernetes provider/pkg/metadata/overrides.go
# ReadyCondition -> SkipAwaitLogic, called by provider/pkg/await/await.go Creation; deployment.go
# DefaultDeploymentTimeoutMins = 10; read at v4.32.0, the newest tag in the snapshot, for 4.34.2).
SKIP_AWAIT_ANNOTATION = {"pulumi.com/skipAwait": "true"}


@dataclass(frozen=True)
class DemoPlacement:
    """Where the demo's pods go and how long they live: the demo, the cluster, the managed GPU group, the labs."""

    demo: DemoSettings
    cluster_name: str
    managed_group: ResolvedPool | None  # the managed GPU group's capacity; None while the group is disabled
    labs: tuple[LabSettings, ...]


def demo_affinity(demo: DemoSettings, cluster_name: str, managed_group: ResolvedPool | None) -> dict[str, Any] | None:
    """Node affinity of the demo pods: pinned to, or preferring, the managed GPU group; None without it."""
    if managed_group is None:
        return None
    term = {
        "matchExpressions": [
            {
                "key": EKS_NODE_GROUP_LABEL_KEY,
                "operator": "In",
                "values": [managed_gpu_node_group_name(cluster_name)],
            }
        ]
    }
    if demo.replicas <= managed_group.desired_slots:
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": term}]}}


def demo_is_session_pod(demo: DemoSettings, labs: Sequence[LabSettings]) -> bool:
    """True when the demo runs in a lab that has a timetable (its pods then live through every session)."""
    return any(lab.name == demo.namespace and lab.sessions for lab in labs)


def place_demo_deployment(deployment: dict[str, Any], placement: DemoPlacement) -> dict[str, Any]:
    """The rendered demo Deployment with the skip-await annotation and its node affinity."""
    metadata = {
        **deployment["metadata"],
        "annotations": {**deployment["metadata"].get("annotations", {}), **SKIP_AWAIT_ANNOTATION},
    }
    pod_spec = dict(deployment["spec"]["template"]["spec"])
    affinity = demo_affinity(placement.demo, placement.cluster_name, placement.managed_group)
    if affinity is not None:
        pod_spec["affinity"] = affinity
    template = {**deployment["spec"]["template"], "spec": pod_spec}
    if demo_is_session_pod(placement.demo, placement.labs):
        # Its pods are class pods: consolidation never takes their node, and expiry waits for them up to the
        # pool's terminationGracePeriod, which the settings size to the longest session (docs/timetable.md).
        pod_meta = template.get("metadata", {})
        template["metadata"] = {
            **pod_meta,
            "annotations": {**pod_meta.get("annotations", {}), DO_NOT_DISRUPT_ANNOTATION: "true"},
        }
    return {**deployment, "metadata": metadata, "spec": {**deployment["spec"], "template": template}}
