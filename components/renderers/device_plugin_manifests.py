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

MPS adds the control daemon the plugin waits for (`device_plugin_mps`); both DaemonSets are built on one
scaffold (`gpu_node_daemonset`), and the pieces every workload shares are in `manifest_helpers`.

Every workload gets a deny-all NetworkPolicy selecting exactly its pods (none of them uses the network),
and where a workload inherently cannot meet a checkov check, the skip and its reason are annotations on it.

All renderers are pure: settings in, plain dicts (camelCase, full objects) out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from components.facts.constants import DEVICE_PLUGIN_IMAGE
from components.renderers.device_plugin_config import PluginConfig, plugin_config_for, render_config
from components.renderers.device_plugin_mps import MPS_MOUNTS, mps_control_daemon_set, mps_root, mps_volumes
from components.renderers.gpu_node_daemonset import (
    CONFIG_FILE,
    CONFIG_MOUNT,
    DAEMON_RESOURCES,
    PLUGIN_APP,
    config_map,
    config_volume,
    daemon_labels,
    gpu_node_daemon_set,
    plugin_name,
)
from components.renderers.manifest_helpers import (
    GPU_CONTAINER_READ_ONLY_ROOT,
    NVIDIA_RUNTIME_ENV,
    Manifest,
    checkov_skip_annotations,
    deny_all_network_policy,
)
from components.settings import GpuSharingSettings

# The kubelet's device-plugin registration directory; the plugin puts its socket there.
DEVICE_PLUGINS_DIR = "/var/lib/kubelet/device-plugins"


# checkov checks each object may skip, with why the workload inherently cannot comply (the checks a skip is
# allowed for, and why, are listed in tests/test_security_linters.SKIPPABLE_CHECKS). Everything else is fixed.
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
    profile = sharing.profile
    config = plugin_config_for(sharing)
    text = render_config(config)
    return ProfileObjects(
        profile=profile,
        config=config,
        config_text=text,
        config_map=config_map(profile, text),
        daemon_set=device_plugin_daemon_set(profile, config, text),
        mps_control_daemon_set=mps_control_daemon_set(profile, config, text) if config.strategy == "mps" else None,
    )
