"""GPU fleet health and utilisation: the two EKS add-ons, the agent's identity, dashboard, alarms.

- `eks-node-monitoring-agent` (with `observability.nodeRepair`): node health conditions such as
  `AcceleratedHardwareReady`, which Karpenter node repair and EKS node auto repair act on.
- `amazon-cloudwatch-observability` (with `observability.gpuMetrics`): Container Insights with enhanced
  observability; its agent gets AWS credentials through EKS Pod Identity. Its own dcgm-exporter is off: the
  platform's dcgm-exporter (per-pod GPU use on shared GPUs) feeds the agent instead, through the node
  monitoring agent's host engine when node repair is on: one DCGM engine per GPU node (docs/gpu-health.md).
- A dashboard and two alarms (stuck GPU node, idle GPUs) to an encrypted SNS topic.
The data lives in `observability_config.py`, `gpu_alarms.py` and `gpu_dashboard.py`; this component only wires it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks
import pulumi_kubernetes as k8s

from components.facts.constants import (
    CLOUDWATCH_AGENT_NAMESPACE,
    CLOUDWATCH_AGENT_SERVICE_ACCOUNT,
    CLOUDWATCH_OBSERVABILITY_ADDON,
    CLOUDWATCH_OBSERVABILITY_ADDON_VERSION,
    NODE_MONITORING_AGENT_ADDON,
    NODE_MONITORING_AGENT_ADDON_VERSION,
)
from components.hub import any_reaper, gpu_idle_for
from components.renderers.device_plugin.gpu_capacity import capacity_rows, pool_slot_ceilings, warm_headroom_rows
from components.renderers.hub import hub_gpu_idle, hub_gpu_idle_metrics
from components.renderers.hub.hub_namespace import hub_namespace
from components.renderers.observability import container_insights_metrics as metrics
from components.renderers.observability import dcgm_exporter_manifests as exporter
from components.renderers.observability import gpu_alarms
from components.renderers.observability import observability_config as config
from components.renderers.observability.gpu_dashboard import lab_namespaces, render_dashboard
from components.resources.hub_gpu_idle import blind_nodes_alarm_resource, create_objects
from components.resources.pod_identity_role import pod_identity_role
from components.settings import StackSettings


@dataclass(frozen=True)
class ObservabilityArgs:
    settings: StackSettings
    eks_cluster_name: pulumi.Input[str]
    # The add-ons' Deployments (operator, webhooks) need a node: created after the system nodes,
    # as CoreDNS is (components/cluster.py), or they stay DEGRADED and time out the first `up`.
    system_node_group: eks.ManagedNodeGroup
    pod_identity_agent: aws.eks.Addon
    k8s_provider: k8s.Provider


def idle_fleet(settings: StackSettings) -> gpu_alarms.IdleFleet:
    """The idle alarm's view of the GPU fleet, read from the whole stack."""
    return gpu_alarms.IdleFleet(
        settings.gpu_node_group,
        settings.demo,
        settings.resolved.managed_group_slots,
        tuple(capacity_rows(settings.resolved.pools)),
        tuple(warm_headroom_rows(settings.resolved.karpenter_pools)),
    )


def alarm_specs(settings: StackSettings) -> tuple[gpu_alarms.AlarmSpec, ...]:
    """The stack's GPU alarms."""
    return gpu_alarms.alarms(settings.cluster_name, settings.observability, settings.system_nodes, idle_fleet(settings))


def dashboard(settings: StackSettings) -> dict[str, Any]:
    """The stack's GPU fleet dashboard body."""
    namespaces = lab_namespaces(settings.labs, settings.demo)
    body = render_dashboard(
        settings.cluster_name, settings.region, namespaces, pool_slot_ceilings(settings.resolved.pools)
    )
    if not any_reaper(settings):
        return body
    return hub_gpu_idle_metrics.with_widget(body, settings.cluster_name, settings.region)


# The exporter's objects by kind (renderers/observability/dcgm_exporter_manifests.exporter_objects).
_EXPORTER_KINDS: dict[str, Any] = {
    "ServiceAccount": k8s.core.v1.ServiceAccount,
    "ClusterRole": k8s.rbac.v1.ClusterRole,
    "ClusterRoleBinding": k8s.rbac.v1.ClusterRoleBinding,
    "ConfigMap": k8s.core.v1.ConfigMap,
    "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
    "DaemonSet": k8s.apps.v1.DaemonSet,
    "Service": k8s.core.v1.Service,
}


class Observability(pulumi.ComponentResource):
    node_monitoring_agent: aws.eks.Addon | None = None
    cloudwatch_observability: aws.eks.Addon | None = None
    alarm_topic: aws.sns.Topic | None = None
    dcgm_exporter: k8s.apps.v1.DaemonSet | None = None

    def __init__(self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:observability:Observability", name, None, opts)
        settings = args.settings
        after_nodes = pulumi.ResourceOptions(parent=self, depends_on=[args.system_node_group])
        if settings.observability.node_repair:
            self.node_monitoring_agent = self._addon(
                f"{name}-node-monitoring-agent",
                args,
                (NODE_MONITORING_AGENT_ADDON, NODE_MONITORING_AGENT_ADDON_VERSION),
                config.node_monitoring_agent_configuration(),
                after_nodes,
            )
        if settings.observability.gpu_metrics:
            self._gpu_metrics(name, args)
        self.register_outputs(
            {
                "alarmTopicArn": self.alarm_topic.arn if self.alarm_topic else None,
                "cloudwatchObservabilityAddon": self.cloudwatch_observability.id
                if self.cloudwatch_observability
                else None,
                "dcgmExporter": self.dcgm_exporter.metadata.name if self.dcgm_exporter else None,
                "nodeMonitoringAgentAddon": self.node_monitoring_agent.id if self.node_monitoring_agent else None,
            }
        )

    @staticmethod
    def _addon(
        name: str,
        args: ObservabilityArgs,
        addon: tuple[str, str],
        configuration: dict[str, Any],
        opts: pulumi.ResourceOptions,
    ) -> aws.eks.Addon:
        """One pinned EKS add-on with its configuration values; it adopts what a manual install left behind."""
        addon_name, version = addon
        return aws.eks.Addon(
            name,
            cluster_name=args.eks_cluster_name,
            addon_name=addon_name,
            addon_version=version,
            configuration_values=json.dumps(configuration, sort_keys=True),
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=args.settings.tags,
            opts=opts,
        )

    def _gpu_metrics(self, name: str, args: ObservabilityArgs) -> None:
        settings = args.settings
        child = pulumi.ResourceOptions(parent=self)
        partition = aws.get_partition_output(opts=pulumi.InvokeOutputOptions(parent=self)).partition
        agent = pod_identity_role(
            f"{name}-cloudwatch-agent",
            role_suffix="cloudwatch-agent",
            cluster_name=settings.cluster_name,
            eks_cluster_name=args.eks_cluster_name,
            service_account=(CLOUDWATCH_AGENT_NAMESPACE, CLOUDWATCH_AGENT_SERVICE_ACCOUNT),
            managed_policy=config.CLOUDWATCH_AGENT_POLICY,
            tags=settings.tags,
            parent=self,
        )
        self.cloudwatch_observability = self._addon(
            f"{name}-cloudwatch-observability",
            args,
            (CLOUDWATCH_OBSERVABILITY_ADDON, CLOUDWATCH_OBSERVABILITY_ADDON_VERSION),
            config.cloudwatch_observability_configuration(),
            # The agent must find its credentials when it starts: Pod Identity agent, association, policy first.
            pulumi.ResourceOptions(
                parent=self, depends_on=[args.system_node_group, args.pod_identity_agent, *agent.ready]
            ),
        )
        self._dcgm_exporter(name, args)
        aws.cloudwatch.Dashboard(
            f"{name}-gpu-dashboard",
            dashboard_name=f"{settings.cluster_name}-gpu-fleet",
            dashboard_body=json.dumps(dashboard(settings), sort_keys=True),
            opts=child,
        )
        self._alarms(name, settings, partition)

    def _dcgm_exporter(self, name: str, args: ObservabilityArgs) -> None:
        """The platform's dcgm-exporter in the add-on's namespace, serving TLS with the add-on's agent certificate.

        Created after the add-on (its namespace and certificate secret) and, with node repair, after the node
        monitoring agent, whose nv-hostengine it connects to.
        """
        assert self.cloudwatch_observability is not None
        addons: list[pulumi.Resource] = [self.cloudwatch_observability]
        if self.node_monitoring_agent is not None:
            addons.append(self.node_monitoring_agent)
        before_pods: list[pulumi.Resource] = []
        for obj in exporter.exporter_objects(args.settings.observability):
            kind = obj["kind"]
            # Top-level fields as the typed resources name them (roleRef -> role_ref); nested values stay camelCase.
            fields = {_snake(key): value for key, value in obj.items() if key not in ("apiVersion", "kind")}
            resource = _EXPORTER_KINDS[kind](
                f"{name}-dcgm-exporter-{kind.lower()}",
                **fields,
                opts=pulumi.ResourceOptions(
                    parent=self,
                    provider=args.k8s_provider,
                    depends_on=[*addons, *before_pods] if kind == "DaemonSet" else addons,
                ),
            )
            if kind == "DaemonSet":
                self.dcgm_exporter = resource
            else:
                before_pods.append(resource)
        # Each lab's GPU idle reaper may list the exporter pods and read the add-on's CA (renderers/hub/hub_gpu_idle).
        reaper_roles = [
            obj
            for lab in args.settings.labs
            if lab.hub is not None
            for obj in hub_gpu_idle.reaper_objects(
                gpu_idle_for(args.settings, lab.hub), hub_namespace(lab.name), lab.name
            )
            if obj["metadata"]["namespace"] == CLOUDWATCH_AGENT_NAMESPACE
        ]
        create_objects(f"{name}-gpu-idle", reaper_roles, provider=args.k8s_provider, parent=self, depends_on=addons)

    def _alarms(self, name: str, settings: StackSettings, partition: pulumi.Output[str]) -> None:
        child = pulumi.ResourceOptions(parent=self)
        account_id = aws.get_caller_identity_output(opts=pulumi.InvokeOutputOptions(parent=self)).account_id
        key = aws.kms.Key(
            f"{name}-alarm-topic",
            description=f"Encryption of the GPU alarm topic of EKS cluster {settings.cluster_name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            policy=pulumi.Output.all(account_id, partition).apply(
                lambda values: json.dumps(config.alarm_topic_key_policy(values[0], values[1]))
            ),
            tags=settings.tags,
            # A deleted key leaves the topic unable to deliver: protected like every key of the stack.
            opts=pulumi.ResourceOptions(parent=self, protect=settings.protect_resources),
        )
        self.alarm_topic = aws.sns.Topic(
            f"{name}-alarms",
            name=f"{settings.cluster_name}-gpu-alarms",
            kms_master_key_id=key.arn,
            tags=settings.tags,
            opts=child,
        )
        # Without it CloudWatch cannot publish: the alarms wait for it (else a first alarm may be lost).
        topic_policy = aws.sns.TopicPolicy(
            f"{name}-alarms",
            arn=self.alarm_topic.arn,
            policy=pulumi.Output.all(self.alarm_topic.arn, account_id, partition).apply(
                lambda values: json.dumps(
                    config.alarm_topic_policy(values[0], values[1], values[2], settings.region, settings.cluster_name)
                )
            ),
            opts=child,
        )
        for index, endpoint in enumerate(settings.observability.alarm_subscribers):
            aws.sns.TopicSubscription(
                f"{name}-alarms-{index}",
                topic=self.alarm_topic.arn,
                protocol=config.subscription_protocol(endpoint),
                endpoint=endpoint,
                opts=child,
            )
        for spec in alarm_specs(settings):
            aws.cloudwatch.MetricAlarm(
                f"{name}-{spec.name.removeprefix(settings.cluster_name + '-')}",
                name=spec.name,
                alarm_description=spec.description,
                comparison_operator=spec.comparison_operator,
                threshold=spec.threshold,
                evaluation_periods=spec.evaluation_periods,
                metric_queries=[_metric_query(query, settings.cluster_name) for query in spec.queries],
                treat_missing_data=spec.treat_missing_data,
                alarm_actions=[self.alarm_topic.arn],
                ok_actions=[self.alarm_topic.arn],
                tags=settings.tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[topic_policy]),
            )
        if any_reaper(settings):
            after = pulumi.ResourceOptions(parent=self, depends_on=[topic_policy])
            blind_nodes_alarm_resource(
                f"{name}-gpu-idle", settings.cluster_name, self.alarm_topic, tags=settings.tags, opts=after
            )


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _metric_query(query: gpu_alarms.MetricQuery, cluster_name: str) -> aws.cloudwatch.MetricAlarmMetricQueryArgs:
    metric = None
    if query.metric_name and query.period and query.stat:
        metric = aws.cloudwatch.MetricAlarmMetricQueryMetricArgs(
            metric_name=query.metric_name,
            namespace=metrics.METRIC_NAMESPACE,
            period=query.period,
            stat=query.stat,
            dimensions={"ClusterName": cluster_name},
        )
    return aws.cloudwatch.MetricAlarmMetricQueryArgs(
        id=query.id, expression=query.expression, label=query.label, return_data=query.return_data, metric=metric
    )
