"""The NVIDIA device plugin: per sharing profile a ConfigMap, its DaemonSet(s) and their deny-all NetworkPolicies.

Objects are rendered by `components.renderers.device_plugin.device_plugin_manifests` (its docstring explains the one
DaemonSet per sharing profile design) and created as typed Kubernetes resources, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.renderers.device_plugin import device_plugin_manifests as manifests
from components.settings import StackSettings


@dataclass(frozen=True)
class DevicePluginArgs:
    settings: StackSettings
    k8s_provider: k8s.Provider


class DevicePlugin(pulumi.ComponentResource):
    config_maps: list[k8s.core.v1.ConfigMap]
    # Every DaemonSet (plugins and MPS control daemons): GPU workloads wait for these.
    daemon_sets: list[k8s.apps.v1.DaemonSet]
    network_policies: list[k8s.networking.v1.NetworkPolicy]

    def __init__(self, name: str, args: DevicePluginArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:gpu:DevicePlugin", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)
        self.config_maps = []
        self.daemon_sets = []
        self.network_policies = []
        for sharing in args.settings.sharing_profiles:
            objects = manifests.device_plugin_objects(sharing)
            config_map = k8s.core.v1.ConfigMap(
                f"{name}-{objects.profile}-config",
                metadata=objects.config_map["metadata"],
                data=objects.config_map["data"],
                opts=child,
            )
            self.config_maps.append(config_map)
            logical_names = [f"{name}-{objects.profile}"]
            if objects.mps_control_daemon_set is not None:
                logical_names.append(f"{name}-{objects.profile}-mps-control-daemon")
            for logical_name, daemon_set, network_policy in zip(
                logical_names, objects.daemon_sets, objects.network_policies, strict=True
            ):
                policy = k8s.networking.v1.NetworkPolicy(
                    f"{logical_name}-deny-all",
                    metadata=network_policy["metadata"],
                    spec=network_policy["spec"],
                    opts=child,
                )
                self.network_policies.append(policy)
                # The pods mount the ConfigMap by name; their NetworkPolicy exists before they do.
                before_pods = pulumi.ResourceOptions(depends_on=[config_map, policy])
                self.daemon_sets.append(
                    k8s.apps.v1.DaemonSet(
                        logical_name,
                        metadata=daemon_set["metadata"],
                        spec=daemon_set["spec"],
                        opts=pulumi.ResourceOptions.merge(child, before_pods),
                    )
                )
        self.register_outputs({"daemonSetNames": [ds.metadata.name for ds in self.daemon_sets]})
