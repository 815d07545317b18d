"""The DaemonSet scaffold the NVIDIA device plugin and its MPS control daemon share (one per sharing profile).

A profile is a fixed pair of node labels (`constants.gpu_node_labels(profile)`, set on managed GPU nodes and
Karpenter GPU nodes alike): each DaemonSet requires its profile label and the GPU label, mounts its profile's
one-key ConfigMap read-only, carries a checksum of it on the pod template, and never talks to the API server.
`device_plugin_manifests` explains why; `device_plugin_mps` adds the MPS control daemon.

Pure: plain dicts (camelCase, full objects) out.
"""

from __future__ import annotations

from components.facts.constants import (
    DEVICE_PLUGIN_IMAGE,
    GPU_LABEL_KEY,
    GPU_LABEL_VALUE,
    GPU_TAINT,
    PROJECT,
    SHARING_PROFILE_LABEL_KEY,
    SYSTEM_NAMESPACE,
)
from components.facts.node_allocatable import DEVICE_PLUGIN_DAEMON
from components.renderers.manifest_helpers import Manifest, config_checksum, plain_manifest

# Node-critical daemons live with the other system components.
NAMESPACE = SYSTEM_NAMESPACE
PLUGIN_APP = "nvidia-device-plugin"
# The tag of the digest-pinned image (`repo:tag@sha256:...`).
PLUGIN_VERSION = DEVICE_PLUGIN_IMAGE.partition("@")[0].rsplit(":", 1)[1]

CONFIG_KEY = "config.yaml"
# Not under /etc/nvidia: toolkit 1.20's update-application-profile hook creates a directory there in
# every GPU container and fails container creation on a read-only mount (nvidia-container-toolkit#2026).
CONFIG_MOUNT_PATH = "/etc/nvidia-device-plugin"
CONFIG_FILE = f"{CONFIG_MOUNT_PATH}/{CONFIG_KEY}"
CHECKSUM_ANNOTATION = "checksum/config"

# Plugin and MPS control daemon are small Go daemons (tens of MiB); limits bound a leak, not normal use.
# The requests are counted in each GPU node's allocatable (node_allocatable.DEVICE_PLUGIN_DAEMON).
DAEMON_RESOURCES = {
    "requests": {
        "cpu": f"{DEVICE_PLUGIN_DAEMON.cpu_millicores}m",
        "memory": f"{DEVICE_PLUGIN_DAEMON.memory_mib}Mi",
    },
    "limits": {"cpu": "500m", "memory": "256Mi"},
}


def plugin_name(profile: str) -> str:
    return f"{PLUGIN_APP}-{profile}"


def config_map_name(profile: str) -> str:
    return f"{plugin_name(profile)}-config"


def daemon_labels(app: str, name: str, component: str, profile: str) -> tuple[dict[str, str], dict[str, str]]:
    """(selector labels, all labels). Selectors are immutable on a DaemonSet: keep them to name and instance."""
    selector = {"app.kubernetes.io/name": app, "app.kubernetes.io/instance": name}
    labels = {
        **selector,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/version": PLUGIN_VERSION,
        "app.kubernetes.io/part-of": PROJECT,
        "app.kubernetes.io/managed-by": "pulumi",
        SHARING_PROFILE_LABEL_KEY: profile,
    }
    return selector, labels


def gpu_node_affinity(profile: str) -> Manifest:
    """Only GPU nodes of this sharing profile: both labels exist on managed and Karpenter GPU nodes."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": GPU_LABEL_KEY, "operator": "In", "values": [GPU_LABEL_VALUE]},
                            {"key": SHARING_PROFILE_LABEL_KEY, "operator": "In", "values": [profile]},
                        ]
                    }
                ]
            }
        }
    }


GPU_TAINT_TOLERATION: Manifest = {"key": GPU_TAINT["key"], "operator": "Exists", "effect": GPU_TAINT["effect"]}


def config_volume(profile: str) -> Manifest:
    return {
        "name": "config",
        "configMap": {"name": config_map_name(profile), "items": [{"key": CONFIG_KEY, "path": CONFIG_KEY}]},
    }


CONFIG_MOUNT: Manifest = {"name": "config", "mountPath": CONFIG_MOUNT_PATH, "readOnly": True}


def config_map(profile: str, config_text: str) -> Manifest:
    _, labels = daemon_labels(PLUGIN_APP, plugin_name(profile), "device-plugin", profile)
    return plain_manifest(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": config_map_name(profile), "namespace": NAMESPACE, "labels": labels},
            "data": {CONFIG_KEY: config_text},
        }
    )


def gpu_node_daemon_set(
    name: str,
    selector: dict[str, str],
    labels: dict[str, str],
    profile: str,
    config_text: str,
    pod_spec: Manifest,
    annotations: dict[str, str] | None = None,
) -> Manifest:
    """A node-critical DaemonSet on the GPU nodes of one sharing profile, rolled when its config changes.

    Neither daemon talks to the API server (the plugin uses the kubelet's socket): no token, no service links.
    """
    metadata: Manifest = {"name": name, "namespace": NAMESPACE, "labels": labels}
    if annotations:
        metadata["annotations"] = annotations
    return plain_manifest(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": metadata,
            "spec": {
                "selector": {"matchLabels": selector},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": labels, "annotations": {CHECKSUM_ANNOTATION: config_checksum(config_text)}},
                    "spec": {
                        "priorityClassName": "system-node-critical",
                        "automountServiceAccountToken": False,
                        "enableServiceLinks": False,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "affinity": gpu_node_affinity(profile),
                        "tolerations": [GPU_TAINT_TOLERATION],
                        **pod_spec,
                    },
                },
            },
        }
    )
