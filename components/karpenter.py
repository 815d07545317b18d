"""Karpenter 1.14.1: controller IAM (EKS Pod Identity), node role, interruption queue and rules, the
CRD and controller Helm charts, and the GPU NodePools / EC2NodeClasses / NodeOverlays.

Documents and objects come from the pure renderers in `karpenter_iam`, `karpenter_interruption` and
`karpenter_manifests`; this component only registers them and orders them. The AWS side is created by `karpenter_aws`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.facts.constants import KARPENTER_CHART_REPO, KARPENTER_NAMESPACE, KARPENTER_VERSION
from components.renderers.karpenter import cpu_user_pool_manifests, karpenter_manifests, karpenter_values
from components.renderers.timetable import timetable_manifests
from components.resources import karpenter_aws
from components.resources.warm_headroom import create_warm_headroom
from components.settings import KarpenterPool, StackSettings


def stack_context(settings: StackSettings) -> karpenter_aws.StackContext:
    """What Karpenter's AWS side reads of the stack."""
    return karpenter_aws.StackContext(settings.cluster_name, settings.region, settings.tags, settings.protect_resources)


def controller_inputs(settings: StackSettings) -> karpenter_values.ControllerInputs:
    """What the controller's Helm values read: the sections and the resolved Karpenter pools."""
    return karpenter_values.ControllerInputs(
        karpenter=settings.karpenter,
        cluster_name=settings.cluster_name,
        region=settings.region,
        observability=settings.observability,
        pools=settings.resolved.karpenter_pools,
    )


def gpu_node_pool(pool: KarpenterPool) -> karpenter_manifests.Manifest:
    """The pool's NodePool: its sharing, and no voluntary disruption through its lab sessions (timetable)."""
    budgets = timetable_manifests.budget_windows(pool.sessions, pool.lead_minutes)
    return karpenter_manifests.node_pool(pool.settings, pool.sharing, session_budgets=budgets)


def node_class_basis(settings: StackSettings) -> karpenter_manifests.NodeClassBasis:
    """What every pool's EC2NodeClass reads of the stack (GPU nodes as their userData builds them)."""
    return karpenter_manifests.NodeClassBasis(settings.cluster_name, settings.tags, settings.gpu_node_bootstrap)


@dataclass(frozen=True)
class KarpenterArgs:
    settings: StackSettings
    # The EKS cluster's name as its output: AWS resources that attach to the cluster wait for it.
    eks_cluster_name: pulumi.Input[str]
    cluster_endpoint: pulumi.Input[str]
    k8s_provider: k8s.Provider
    # Karpenter must never run on nodes it launches: the chart waits for the system node group.
    system_node_group: pulumi.Resource
    # The controller's AWS credentials come through the EKS Pod Identity agent add-on.
    pod_identity_agent: pulumi.Resource
    # Its pods resolve the EKS, SQS, EC2 and pricing endpoints by name: CoreDNS must be running first.
    coredns: pulumi.Resource


class Karpenter(pulumi.ComponentResource):
    node_role: aws.iam.Role
    controller_role: aws.iam.Role
    interruption_queue: aws.sqs.Queue
    crd_chart: k8s.helm.v4.Chart
    controller_chart: k8s.helm.v4.Chart
    capacity_buffers: dict[str, k8s.apiextensions.CustomResource]

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:karpenter:Karpenter", name, None, opts)
        settings = args.settings
        # AWS side (karpenter_aws): children of this component, so their URNs are unchanged.
        stack = stack_context(settings)
        node_identity = karpenter_aws.create_node_identity(name, stack, args.eks_cluster_name, parent=self)
        self.node_role = node_identity.role
        self.interruption_queue = karpenter_aws.create_interruption_handling(name, stack, parent=self)
        controller_identity = karpenter_aws.create_controller_identity(
            name, stack, args.eks_cluster_name, self.node_role, self.interruption_queue, parent=self
        )
        self.controller_role = controller_identity.role
        # In-cluster side: the charts, then the GPU pools.
        self.crd_chart = self._crd_chart(name, args.k8s_provider)
        self.controller_chart = self._controller_chart(name, args, controller_identity.ready)
        # Custom resources need their CRDs, and the controller too: it removes the finalizers it puts on
        # NodePools and EC2NodeClasses, so on destroy they must go before the controller does.
        karpenter_ready: list[pulumi.Resource] = [self.crd_chart, self.controller_chart]
        # Each pool's CapacityBuffer by pool name (pools with warm slots or a lab timetable).
        self.capacity_buffers = {}
        for pool in settings.resolved.karpenter_pools:
            buffer = self._gpu_pool(name, settings, pool, args.k8s_provider, karpenter_ready, node_identity.ready)
            if buffer is not None:
                self.capacity_buffers[pool.name] = buffer
        if settings.cpu_user_pool_enabled:
            self._cpu_user_pool(name, settings, args.k8s_provider, karpenter_ready, node_identity.ready)

        self.register_outputs(
            {
                "controllerRoleArn": self.controller_role.arn,
                "nodeRoleName": self.node_role.name,
                "interruptionQueueName": self.interruption_queue.name,
            }
        )

    def _crd_chart(self, name: str, provider: k8s.Provider) -> k8s.helm.v4.Chart:
        # `karpenter-crd` ships the CRDs as templates, so they are Pulumi-managed objects upgraded with the
        # chart version. (The `karpenter` chart's crds/ folder is install-once: Helm never upgrades it.)
        return k8s.helm.v4.Chart(
            f"{name}-crd",
            name="karpenter-crd",
            chart=f"{KARPENTER_CHART_REPO}/karpenter-crd",
            version=KARPENTER_VERSION,
            namespace=KARPENTER_NAMESPACE,
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )

    def _controller_chart(
        self, name: str, args: KarpenterArgs, controller_identity: list[pulumi.Resource]
    ) -> k8s.helm.v4.Chart:
        inputs = controller_inputs(args.settings)
        queue = self.interruption_queue
        values = pulumi.Output.all(args.cluster_endpoint, queue.name).apply(
            lambda values: karpenter_values.helm_values(
                inputs, cluster_endpoint=values[0], interruption_queue=values[1]
            )
        )
        return k8s.helm.v4.Chart(
            f"{name}-controller",
            name="karpenter",
            chart=f"{KARPENTER_CHART_REPO}/karpenter",
            version=KARPENTER_VERSION,
            namespace=KARPENTER_NAMESPACE,
            # The karpenter-crd chart above owns the CRDs. Chart v4 would otherwise render this chart's
            # crds/ too: a second Pulumi resource for each CRD, fighting over the same object.
            skip_crds=True,
            values=values,
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.k8s_provider,
                # The controller starts only with its CRDs, AWS permissions, Pod Identity credentials,
                # its queue, non-Karpenter nodes to run on, and cluster DNS.
                depends_on=[
                    self.crd_chart,
                    *controller_identity,
                    args.pod_identity_agent,
                    queue,
                    args.system_node_group,
                    args.coredns,
                ],
            ),
        )

    def _cpu_user_pool(
        self,
        name: str,
        settings: StackSettings,
        provider: k8s.Provider,
        karpenter_ready: list[pulumi.Resource],
        node_identity: list[pulumi.Resource],
    ) -> None:
        """The learners' CPU user pool: its EC2NodeClass (the GPU pools' node role), then its NodePool."""
        pool = settings.karpenter.cpu_user_pool
        node_class = self.node_role.name.apply(
            lambda role: cpu_user_pool_manifests.node_class(
                pool, settings.cluster_name, settings.tags, node_role_name=role
            )
        )
        node_class_cr = self._node_class(
            f"{name}-{pool.name}", node_class, provider, [*karpenter_ready, *node_identity]
        )
        node_pool = cpu_user_pool_manifests.node_pool(pool)
        k8s.apiextensions.CustomResource(
            f"{name}-{pool.name}-nodepool",
            api_version=node_pool["apiVersion"],
            kind=node_pool["kind"],
            metadata=node_pool["metadata"],
            spec=node_pool["spec"],
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*karpenter_ready, node_class_cr]),
        )

    def _node_class(
        self, name: str, node_class: pulumi.Output[dict[str, Any]], provider: k8s.Provider, after: list[pulumi.Resource]
    ) -> k8s.apiextensions.CustomResource:
        """A pool's EC2NodeClass (GPU or CPU user pool); `after`: the CRDs, and the node role's policies and access
        entry (nodes of the class can join only once both exist)."""
        return k8s.apiextensions.CustomResource(
            f"{name}-nodeclass",
            api_version=karpenter_manifests.NODECLASS_API_VERSION,
            kind="EC2NodeClass",
            metadata=node_class.apply(lambda obj: obj["metadata"]),
            spec=node_class.apply(lambda obj: obj["spec"]),
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=after),
        )

    def _gpu_pool(
        self,
        name: str,
        settings: StackSettings,
        resolved: KarpenterPool,
        provider: k8s.Provider,
        karpenter_ready: list[pulumi.Resource],
        node_identity: list[pulumi.Resource],
    ) -> k8s.apiextensions.CustomResource | None:
        """One GPU pool: its EC2NodeClass, its NodeOverlays (when it shares GPUs), its NodePool, then its
        CapacityBuffer (returned; None without warm slots or sessions)."""
        pool, sharing = resolved.settings, resolved.sharing
        basis = node_class_basis(settings)
        node_class = self.node_role.name.apply(
            lambda role: karpenter_manifests.node_class(pool, sharing, basis, node_role_name=role)
        )
        node_class_cr = self._node_class(
            f"{name}-{pool.name}", node_class, provider, [*karpenter_ready, *node_identity]
        )
        overlays = [
            k8s.apiextensions.CustomResource(
                f"{name}-{overlay['metadata']['name']}",
                api_version=overlay["apiVersion"],
                kind=overlay["kind"],
                metadata=overlay["metadata"],
                spec=overlay["spec"],
                opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=karpenter_ready),
            )
            for overlay in karpenter_manifests.node_overlays(pool, sharing)
        ]
        node_pool = gpu_node_pool(resolved)
        node_pool_cr = k8s.apiextensions.CustomResource(
            f"{name}-{pool.name}-nodepool",
            api_version=node_pool["apiVersion"],
            kind=node_pool["kind"],
            metadata=node_pool["metadata"],
            spec=node_pool["spec"],
            # The pool launches nothing before its node class exists and its overlays tell Karpenter
            # how many shared GPUs a node offers (else: one node per pending pod).
            opts=pulumi.ResourceOptions(
                parent=self, provider=provider, depends_on=[*karpenter_ready, node_class_cr, *overlays]
            ),
        )
        return create_warm_headroom(
            name,
            pool,
            slot_shape=resolved.warm_slot_shape,
            sessions=resolved.sessions,
            parent=self,
            provider=provider,
            depends_on=[*karpenter_ready, node_pool_cr],
        )
