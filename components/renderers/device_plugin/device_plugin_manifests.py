"""Kubernetes objects of the NVIDIA device plugin (one DaemonSet per sharing profile); the demo is in `demo_manifests`.

Why one ConfigMap + one DaemonSet per sharing profile, and not the Helm chart's config-manager:
the chart serves several configs from one DaemonSet by running `config-manager` as an init
container and a sidecar that watch the node's `nvidia.com/device-plugin.config` label, symlink the
chosen file and SIGHUP the plugin. That needs a ServiceAccount with a ClusterRole on nodes,
`shareProcessNamespace`, an exact argv[0], and it exits on an unknown label value (the chart's
own MPS sidecar signals the wrong process name, NVIDIA/k8s-device-plugin PR #1827). It also does
not notice ConfigMap content edits. A profile here is a fixed pair of node labels instead
(`constants.gpu_node_labels(profile)`, set on managed GPU nodes and Karpenter GPU nodes alike):
each DaemonSet requires its profile label and the GPU label, mounts its own one-key ConfigMap
read-only, carries a checksum of it on the pod template, and never talks to the API server - no
RBAC, no token, no sidecar. A node runs exactly one plugin: its own profile's. The profile name
encodes strategy, replicas and strictness, so changing those creates a new ConfigMap/DaemonSet
pair for newly labelled nodes; the checksum rolls the pods on every other change of the file
(flags, a renderer or plugin upgrade).

MPS adds the control daemon the plugin waits for (per profile, selected by the same labels instead of GFD's
`nvidia.com/mps.capable`, with selector labels distinct from the plugin's, NVIDIA/k8s-device-plugin#982); both
DaemonSets are built on one scaffold (`gpu_node_daemon_set`), and the pieces every workload shares are in
`manifest_helpers`.

Every workload gets a deny-all NetworkPolicy selecting exactly its pods (none of them uses the network),
and where a workload inherently cannot meet a checkov check, the skip and its reason are annotations on it.

All renderers are pure: settings in, plain dicts (camelCase, full objects) out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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
from components.renderers.device_plugin.device_plugin_config import PluginConfig, plugin_config_for, render_config
from components.renderers.manifest_helpers import (
    GPU_CONTAINER_READ_ONLY_ROOT,
    NVIDIA_RUNTIME_ENV,
    Manifest,
    checkov_skip_annotations,
    config_checksum,
    deny_all_network_policy,
    plain_manifest,
)
from components.settings import GpuSharingSettings

# --- the DaemonSet scaffold the plugin and its MPS control daemon share ---

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
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": config_map_name(profile), "namespace": NAMESPACE, "labels": labels},
        "data": {CONFIG_KEY: config_text},
    }


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
    return {
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


# --- the MPS control daemon, and the MPS root both it and the plugin mount ---

MPS_DAEMON_APP = "nvidia-mps-control-daemon"
# Where the MPS control daemon and the plugin expect the MPS root inside their containers (mps.ContainerRoot).
MPS_CONTAINER_ROOT = "/mps"


def mps_daemon_name(profile: str) -> str:
    return f"{MPS_DAEMON_APP}-{profile}"


def mps_root(config: PluginConfig) -> str:
    if config.strategy != "mps" or not config.flags.mps_root:
        raise ValueError("only an MPS config (which always names flags.mpsRoot) has an MPS root")
    return config.flags.mps_root


def mps_volumes(root: str) -> list[Manifest]:
    return [
        {"name": "mps-root", "hostPath": {"path": root, "type": "DirectoryOrCreate"}},
        # A tmpfs the control daemon's init container mounts there (mount-shm); it exists once that ran.
        {"name": "mps-shm", "hostPath": {"path": f"{root}/shm"}},
    ]


MPS_MOUNTS: list[Manifest] = [
    {"name": "mps-root", "mountPath": MPS_CONTAINER_ROOT},
    {"name": "mps-shm", "mountPath": "/dev/shm"},
]


def mps_control_daemon_set(profile: str, config: PluginConfig, config_text: str) -> Manifest:
    """The MPS control daemon the plugin waits for (`/mps/.ready`) before it advertises MPS replicas.

    Privileged by necessity: it sets the GPU compute mode (`nvidia-smi -c EXCLUSIVE_PROCESS`) and
    mounts a shared tmpfs for MPS clients with bidirectional propagation; hostPID lets the MPS
    server see client processes of other pods (chart `mps.enableHostPID`).
    """
    name = mps_daemon_name(profile)
    selector, labels = daemon_labels(MPS_DAEMON_APP, name, "mps-control-daemon", profile)
    privileged = {"privileged": True}
    return gpu_node_daemon_set(
        name,
        selector,
        labels,
        profile,
        config_text,
        pod_spec={
            "hostPID": True,
            "initContainers": [
                {
                    "name": "mps-control-daemon-mounts",
                    "image": DEVICE_PLUGIN_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["mps-control-daemon", "mount-shm"],
                    "securityContext": privileged,
                    "resources": DAEMON_RESOURCES,
                    "volumeMounts": [
                        {
                            "name": "mps-root",
                            "mountPath": MPS_CONTAINER_ROOT,
                            "mountPropagation": "Bidirectional",
                        }
                    ],
                }
            ],
            "containers": [
                {
                    "name": "mps-control-daemon-ctr",
                    "image": DEVICE_PLUGIN_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["mps-control-daemon"],
                    "env": [{"name": "CONFIG_FILE", "value": CONFIG_FILE}, *NVIDIA_RUNTIME_ENV],
                    "securityContext": privileged,
                    "resources": DAEMON_RESOURCES,
                    "volumeMounts": [*MPS_MOUNTS, CONFIG_MOUNT],
                }
            ],
            "volumes": [*mps_volumes(mps_root(config)), config_volume(profile)],
        },
    )


# --- the device plugin ---

# The kubelet's device-plugin registration directory; the plugin puts its socket there.
DEVICE_PLUGINS_DIR = "/var/lib/kubelet/device-plugins"


# checkov checks each object may skip, with why the workload inherently cannot comply (the checks a skip is
# allowed for, and why, are listed in tests/policy/test_security_linters.py, SKIPPABLE_CHECKS). Everything else is fixed.
PLUGIN_CHECKOV_SKIPS: Mapping[str, str] = {
    "CKV_K8S_8": "no endpoint to probe: the plugin serves gRPC on a kubelet unix socket and exits on fatal errors",
    "CKV_K8S_9": "receives no Service traffic; the kubelet tracks it through device-plugin registration",
    "CKV_K8S_23": "runs as root to create its socket in the root-owned /var/lib/kubelet/device-plugins",
    "CKV_K8S_40": "runs as UID 0 for the same root-owned kubelet socket directory",
    "CKV_K8S_22": "GPU container: NVIDIA runtime hooks write into its root filesystem (nvidia-container-toolkit#2026)",
    "CKV_K8S_15": "pinned image stays IfNotPresent so a node-critical plugin restart never depends on the registry",
}


def required_capabilities(config: PluginConfig) -> list[str]:
    """Capabilities the plugin needs for this config: CAP_SYS_ADMIN for MIG or `volume-mounts` device lists.

    Same rule as the chart's securityContext helper, computed from the actual config instead of
    assumed for an opaque ConfigMap; with `migStrategy: none` and `envvar` it is none at all.
    """
    plugin_flags = config.flags.plugin
    strategies = plugin_flags.device_list_strategies if plugin_flags else ("envvar",)
    if config.flags.mig_strategy not in (None, "none") or "volume-mounts" in strategies:
        return ["SYS_ADMIN"]
    return []


def _add(capabilities: list[str]) -> Manifest:
    return {"add": capabilities} if capabilities else {}


def device_plugin_daemon_set(profile: str, config: PluginConfig, config_text: str) -> Manifest:
    name = plugin_name(profile)
    selector, labels = daemon_labels(PLUGIN_APP, name, "device-plugin", profile)
    env = [{"name": "CONFIG_FILE", "value": CONFIG_FILE}, *NVIDIA_RUNTIME_ENV]
    mounts = [{"name": "kubelet-device-plugins-dir", "mountPath": DEVICE_PLUGINS_DIR}, CONFIG_MOUNT]
    volumes = [
        {"name": "kubelet-device-plugins-dir", "hostPath": {"path": DEVICE_PLUGINS_DIR, "type": "Directory"}},
        config_volume(profile),
    ]
    if config.strategy == "mps":
        # The config already names mpsRoot; the env var mirrors it (the chart always sets it, issue #1132).
        env.append({"name": "MPS_ROOT", "value": mps_root(config)})
        mounts += MPS_MOUNTS
        volumes += mps_volumes(mps_root(config))
    return gpu_node_daemon_set(
        name,
        selector,
        labels,
        profile,
        config_text,
        annotations=checkov_skip_annotations(PLUGIN_CHECKOV_SKIPS),
        pod_spec={
            "containers": [
                {
                    "name": "nvidia-device-plugin-ctr",
                    "image": DEVICE_PLUGIN_IMAGE,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["nvidia-device-plugin"],
                    "env": env,
                    # Runs as root (image USER 0) to write its socket into the root-owned kubelet directory.
                    "securityContext": {
                        "allowPrivilegeEscalation": False,
                        "readOnlyRootFilesystem": GPU_CONTAINER_READ_ONLY_ROOT,
                        "capabilities": {"drop": ["ALL"], **_add(required_capabilities(config))},
                    },
                    "resources": DAEMON_RESOURCES,
                    "volumeMounts": mounts,
                }
            ],
            "volumes": volumes,
        },
    )


@dataclass(frozen=True)
class ProfileObjects:
    """Everything one sharing profile deploys."""

    profile: str
    config: PluginConfig
    config_text: str
    config_map: Manifest
    daemon_set: Manifest
    mps_control_daemon_set: Manifest | None  # MPS profiles only

    @property
    def daemon_sets(self) -> tuple[Manifest, ...]:
        mps = self.mps_control_daemon_set
        return (self.daemon_set,) if mps is None else (self.daemon_set, mps)

    @property
    def network_policies(self) -> tuple[Manifest, ...]:
        """One deny-all policy per DaemonSet, in order: neither the plugin nor the MPS daemon uses the network."""
        return tuple(deny_all_network_policy(daemon_set) for daemon_set in self.daemon_sets)


def device_plugin_objects(sharing: GpuSharingSettings) -> ProfileObjects:
    """The profile's plugin config and its objects, copied once into fresh trees (nothing shared between them)."""
    profile = sharing.profile
    config = plugin_config_for(sharing)
    text = render_config(config)
    mps = mps_control_daemon_set(profile, config, text) if config.strategy == "mps" else None
    daemon_set = device_plugin_daemon_set(profile, config, text)
    built = plain_manifest({"configMap": config_map(profile, text), "daemonSet": daemon_set, "mps": mps})
    return ProfileObjects(profile, config, text, built["configMap"], built["daemonSet"], built["mps"])
