"""The MPS control daemon of an MPS sharing profile, and the MPS root both it and the device plugin mount.

MPS adds the control daemon the plugin waits for (per profile, selected by the same labels
instead of GFD's `nvidia.com/mps.capable`, with selector labels distinct from the plugin's,
NVIDIA/k8s-device-plugin#982). Pure: plain dicts out.
"""

from __future__ import annotations

from components.facts.constants import DEVICE_PLUGIN_IMAGE
from components.renderers.device_plugin_config import PluginConfig
from components.renderers.gpu_node_daemonset import (
    CONFIG_FILE,
    CONFIG_MOUNT,
    DAEMON_RESOURCES,
    config_volume,
    daemon_labels,
    gpu_node_daemon_set,
)
from components.renderers.manifest_helpers import NVIDIA_RUNTIME_ENV, Manifest

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
