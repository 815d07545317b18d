"""The learning-lab demo: pods that each request `nvidia.com/gpu: 1` and share one physical GPU.

Objects are rendered by `components.renderers.labs.demo_manifests` (security context, why it runs non-root
and where its pods go are explained there); this component only creates them, after the device plugin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.device_plugin import DevicePlugin
from components.renderers.labs import demo_manifests as manifests
from components.settings import StackSettings


@dataclass(frozen=True)
class DemoWorkloadArgs:
    settings: StackSettings
    k8s_provider: k8s.Provider
    device_plugin: DevicePlugin
    # The managed GPU group's node group, when enabled: the pods are pinned to (or prefer) its nodes, so
    # they are created once those nodes exist, instead of pending and making Karpenter launch one.
    gpu_node_group: pulumi.Resource | None = None
    # The lab namespace the demo runs in (created by `components.labs`); None: the demo creates its own.
    lab_namespace: k8s.core.v1.Namespace | None = None
    # That lab's quota, LimitRange and NetworkPolicies: the pods start fenced and counted.
    lab_objects: Sequence[pulumi.Resource] = ()


def demo_placement(settings: StackSettings) -> manifests.DemoPlacement:
    """What places the demo's pods, read from the whole stack: the managed GPU group's capacity, the labs."""
    return manifests.DemoPlacement(
        settings.demo, settings.cluster_name, settings.resolved.managed_group, tuple(settings.labs)
    )


class DemoWorkload(pulumi.ComponentResource):
    namespace: k8s.core.v1.Namespace
    network_policy: k8s.networking.v1.NetworkPolicy | None  # None in a lab: the lab's policies apply
    deployment: k8s.apps.v1.Deployment

    def __init__(self, name: str, args: DemoWorkloadArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:demo:DemoWorkload", name, None, opts)
        settings = args.settings
        child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)

        if args.lab_namespace is not None:
            self.namespace = args.lab_namespace
        else:
            namespace = manifests.demo_namespace(settings.demo, settings.kubernetes_version)
            self.namespace = k8s.core.v1.Namespace(f"{name}-namespace", metadata=namespace["metadata"], opts=child)

        # NetworkPolicies are additive: in a lab namespace the lab's policies already select every pod, and a
        # deny-all next to them would deny nothing. The deny-all is only the demo's own namespace's policy.
        self.network_policy = None
        if args.lab_namespace is None:
            network_policy = manifests.demo_network_policy(settings.demo)
            self.network_policy = k8s.networking.v1.NetworkPolicy(
                f"{name}-deny-all",
                metadata=network_policy["metadata"],
                spec=network_policy["spec"],
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[self.namespace])),
            )

        deployment = manifests.place_demo_deployment(manifests.demo_deployment(settings.demo), demo_placement(settings))
        # In its namespace, after its NetworkPolicy, once the device plugin can advertise nvidia.com/gpu
        # and the managed GPU nodes (if any) have joined.
        gpu_nodes = [args.gpu_node_group] if args.gpu_node_group is not None else []
        fences = [self.network_policy] if self.network_policy is not None else list(args.lab_objects)
        after_plugin = pulumi.ResourceOptions(
            depends_on=[self.namespace, *fences, *args.device_plugin.daemon_sets, *gpu_nodes]
        )
        self.deployment = k8s.apps.v1.Deployment(
            name,
            metadata=deployment["metadata"],
            spec=deployment["spec"],
            opts=pulumi.ResourceOptions.merge(child, after_plugin),
        )
        self.register_outputs({"namespace": self.namespace.metadata.name, "deployment": self.deployment.metadata.name})
