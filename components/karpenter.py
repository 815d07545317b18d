"""Karpenter 1.14.1: controller IAM (EKS Pod Identity), node role, interruption queue and rules, the
CRD and controller Helm charts, and the GPU NodePools / EC2NodeClasses / NodeOverlays.

Documents and objects come from the pure renderers in `karpenter_iam` and `karpenter_manifests`;
this component only registers them and orders them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.constants import (
    KARPENTER_CHART_REPO,
    KARPENTER_NAMESPACE,
    KARPENTER_SERVICE_ACCOUNT,
    KARPENTER_VERSION,
)
from components.node_role import create_node_role
from components.renderers import karpenter_iam, karpenter_manifests
from components.settings import NodePoolSettings, StackSettings
from components.warm_headroom import create_warm_headroom


@dataclass(frozen=True)
class KarpenterArgs:
    settings: StackSettings
    cluster_name: str  # for names and IAM conditions, known before deployment
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


def _json(document: karpenter_iam.PolicyDocument) -> str:
    return json.dumps(document, sort_keys=True)


class Karpenter(pulumi.ComponentResource):
    node_role: aws.iam.Role
    controller_role: aws.iam.Role
    interruption_queue: aws.sqs.Queue
    crd_chart: k8s.helm.v4.Chart
    controller_chart: k8s.helm.v4.Chart

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:karpenter:Karpenter", name, None, opts)
        settings = args.settings
        cluster = args.cluster_name
        tags = settings.tags
        child = pulumi.ResourceOptions(parent=self)
        cluster_name = args.eks_cluster_name

        # --- node role: the identity of every node Karpenter launches --------------------------------
        node_role = create_node_role(f"{name}-node", f"{cluster}-karpenter-node", tags, parent=self)
        self.node_role = node_role.role
        node_access = aws.eks.AccessEntry(
            f"{name}-node",
            cluster_name=cluster_name,
            principal_arn=self.node_role.arn,
            type="EC2_LINUX",
            tags=tags,
            opts=child,
        )

        # --- interruption handling: EventBridge -> SQS -> controller ------------------------------------
        self.interruption_queue = aws.sqs.Queue(
            f"{name}-interruption",
            name=cluster,
            message_retention_seconds=karpenter_iam.INTERRUPTION_QUEUE_RETENTION_SECONDS,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=settings.protect_resources),
        )
        queue = self.interruption_queue
        aws.sqs.QueuePolicy(
            f"{name}-interruption",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: _json(karpenter_iam.interruption_queue_policy(arn))),
            opts=child,
        )
        for purpose, (_, detail_type) in karpenter_iam.INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{purpose}",
                name=f"{cluster}-karpenter-{purpose}",
                description=f"Karpenter interruption handling: {detail_type}",
                event_pattern=json.dumps(karpenter_iam.interruption_event_pattern(purpose), sort_keys=True),
                tags=tags,
                opts=child,
            )
            aws.cloudwatch.EventTarget(
                f"{name}-{purpose}",
                rule=rule.name,
                target_id=karpenter_iam.INTERRUPTION_QUEUE_TARGET_ID,
                arn=queue.arn,
                opts=child,
            )

        # --- controller role (EKS Pod Identity) with the six official policies ---------------------------
        self.controller_role = aws.iam.Role(
            f"{name}-controller",
            name=f"{cluster}-karpenter-controller",
            assume_role_policy=_json(karpenter_iam.controller_trust_policy(cluster)),
            tags=tags,
            opts=child,
        )
        identity = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self))
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self))
        scope = pulumi.Output.all(partition.partition, identity.account_id).apply(
            lambda values: karpenter_iam.AwsScope(
                partition=values[0], region=settings.region, account_id=values[1], cluster_name=cluster
            )
        )
        # Each document waits only for the ARNs it names.
        documents: dict[str, pulumi.Output[karpenter_iam.PolicyDocument]] = {
            "node-lifecycle": scope.apply(karpenter_iam.node_lifecycle_policy),
            "iam-integration": pulumi.Output.all(scope, self.node_role.arn).apply(
                lambda values: karpenter_iam.iam_integration_policy(values[0], values[1])
            ),
            "eks-integration": scope.apply(karpenter_iam.eks_integration_policy),
            "interruption": queue.arn.apply(karpenter_iam.interruption_policy),
            "zonal-shift": scope.apply(karpenter_iam.zonal_shift_policy),
            "resource-discovery": scope.apply(karpenter_iam.resource_discovery_policy),
        }
        attachments = []
        for purpose, official in karpenter_iam.CONTROLLER_POLICY_PURPOSES.items():
            policy = aws.iam.Policy(
                f"{name}-{purpose}",
                name=f"{cluster}-karpenter-{purpose}",
                description=f"Karpenter {KARPENTER_VERSION} controller: KarpenterController{official}Policy",
                policy=documents[purpose].apply(_json),
                tags=tags,
                opts=child,
            )
            attachments.append(
                aws.iam.RolePolicyAttachment(
                    f"{name}-{purpose}", role=self.controller_role.name, policy_arn=policy.arn, opts=child
                )
            )
        pod_identity = aws.eks.PodIdentityAssociation(
            f"{name}-controller",
            cluster_name=cluster_name,
            namespace=KARPENTER_NAMESPACE,
            service_account=KARPENTER_SERVICE_ACCOUNT,
            role_arn=self.controller_role.arn,
            tags=tags,
            opts=child,
        )

        # --- Helm: CRDs, then the controller ----------------------------------------------------------------
        # `karpenter-crd` ships the CRDs as templates, so they are Pulumi-managed objects upgraded with the
        # chart version. (The `karpenter` chart's crds/ folder is install-once: Helm never upgrades it.)
        self.crd_chart = k8s.helm.v4.Chart(
            f"{name}-crd",
            name="karpenter-crd",
            chart=f"{KARPENTER_CHART_REPO}/karpenter-crd",
            version=KARPENTER_VERSION,
            namespace=KARPENTER_NAMESPACE,
            opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider),
        )
        values = pulumi.Output.all(args.cluster_endpoint, queue.name).apply(
            lambda values: karpenter_manifests.helm_values(
                settings, cluster_endpoint=values[0], interruption_queue=values[1]
            )
        )
        self.controller_chart = k8s.helm.v4.Chart(
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
                    *attachments,
                    pod_identity,
                    args.pod_identity_agent,
                    queue,
                    args.system_node_group,
                    args.coredns,
                ],
            ),
        )

        # --- GPU node pools ----------------------------------------------------------------------------------
        # Custom resources need their CRDs, and the controller too: it removes the finalizers it puts on
        # NodePools and EC2NodeClasses, so on destroy they must go before the controller does.
        karpenter_ready: list[pulumi.Resource] = [self.crd_chart, self.controller_chart]
        for pool in settings.karpenter.node_pools:
            self._gpu_pool(
                name, settings, pool, args.k8s_provider, karpenter_ready, [node_access, *node_role.attachments]
            )

        self.register_outputs(
            {
                "controllerRoleArn": self.controller_role.arn,
                "nodeRoleName": self.node_role.name,
                "interruptionQueueName": queue.name,
            }
        )

    def _gpu_pool(
        self,
        name: str,
        settings: StackSettings,
        pool: NodePoolSettings,
        provider: k8s.Provider,
        karpenter_ready: list[pulumi.Resource],
        node_identity: list[pulumi.Resource],
    ) -> None:
        """One GPU pool: its EC2NodeClass, its NodeOverlays (when it shares GPUs), then its NodePool."""
        node_class = self.node_role.name.apply(
            lambda role: karpenter_manifests.node_class(settings, pool, node_role_name=role)
        )
        node_class_cr = k8s.apiextensions.CustomResource(
            f"{name}-{pool.name}-nodeclass",
            api_version=karpenter_manifests.NODECLASS_API_VERSION,
            kind="EC2NodeClass",
            metadata=node_class.apply(lambda obj: obj["metadata"]),
            spec=node_class.apply(lambda obj: obj["spec"]),
            # Nodes of this class can join only once their role has its policies and an access entry.
            opts=pulumi.ResourceOptions(parent=self, provider=provider, depends_on=[*karpenter_ready, *node_identity]),
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
            for overlay in karpenter_manifests.node_overlays(settings, pool)
        ]
        node_pool = karpenter_manifests.node_pool(settings, pool)
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
        create_warm_headroom(
            name, settings, pool, parent=self, provider=provider, depends_on=[*karpenter_ready, node_pool_cr]
        )
