"""Observability as plain data: EKS add-on configuration values, the agent's trust policy, the alarm topic's policies.

Pure: settings in, dicts out, no Pulumi import. `components/observability.py` turns them into resources. The
metrics the agent sends are named in `container_insights_metrics`; the alarms on them are in `gpu_alarms`.
"""

from __future__ import annotations

from typing import Any, Final

from components.facts.constants import (
    CLOUDWATCH_AGENT_NAMESPACE,
    CLOUDWATCH_AGENT_SERVICE_ACCOUNT,
    GPU_TOLERATION,
    IAM_POLICY_VERSION,
)
from components.renderers.access.pod_identity import pod_identity_trust_policy
from components.renderers.observability.container_insights_metrics import COLLECTION_INTERVAL_SECONDS

CLOUDWATCH_AGENT_POLICY: Final = "CloudWatchAgentServerPolicy"  # AWS managed: least privilege for the agent


def node_monitoring_agent_configuration() -> dict[str, Any]:
    """Configuration values of the `eks-node-monitoring-agent` add-on.

    aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/values.yaml @ v1.6.6: the node agent
    tolerates everything (`operator: Exists`), restated here so the guarantee does not hang on a default;
    the `dcgm-server` DaemonSet (nv-hostengine for the NVIDIA monitor's DCGM checks, affinity: NVIDIA
    instance types only) has `tolerations: []`, so without ours it never runs on a tainted GPU node.
    Keys checked against charts/configuration.schema.json @ v1.6.6 (additionalProperties: false).
    """
    return {
        "nodeAgent": {"tolerations": [{"operator": "Exists"}]},
        "dcgmAgent": {"tolerations": [dict(GPU_TOLERATION)]},
    }


def cloudwatch_observability_configuration() -> dict[str, Any]:
    """Configuration values of the `amazon-cloudwatch-observability` add-on.

    Container Insights with enhanced observability and the accelerated-compute (NVIDIA DCGM) metrics,
    collected every minute. The chart fills in `cluster_name` and the region when the config leaves
    them out (aws-observability/helm-charts charts/amazon-cloudwatch-observability/templates/_helpers.tpl
    `cloudwatch-agent.config-modifier` @ amazon-cloudwatch-observability-6.4.0). Root `tolerations`
    apply to every component without its own, the dcgm-exporter DaemonSet included (`common.tolerations`);
    the chart's default `operator: Exists` is restated so GPU nodes are covered explicitly.
    Container logs (Fluent Bit) stay off: GPU metrics are the point, and log ingestion is billed per GB.
    The chart's dcgm-exporter is off (`dcgmExporter.enabled`, default true; templates/linux/
    dcgm-exporter-daemonset.yaml renders nothing without it): it would start a second DCGM host engine on
    every GPU node and cannot be pointed at another one, nor configured for per-pod use on shared GPUs. The
    platform's own exporter (renderers/observability/dcgm_exporter_manifests.py) takes its place behind the same Service,
    so the agent's GPU metrics keep flowing (docs/gpu-health.md).
    """
    return {
        "tolerations": [{"operator": "Exists"}],
        "containerLogs": {"enabled": False},
        "dcgmExporter": {"enabled": False},
        "agent": {
            "config": {
                "logs": {
                    "metrics_collected": {
                        "kubernetes": {
                            "enhanced_container_insights": True,
                            "accelerated_compute_metrics": True,
                            "metrics_collection_interval": COLLECTION_INTERVAL_SECONDS,
                        }
                    }
                }
            }
        },
    }


def cloudwatch_agent_trust_policy(cluster_name: str) -> dict[str, Any]:
    """EKS Pod Identity may assume the agent role only for amazon-cloudwatch/cloudwatch-agent of this cluster."""
    return pod_identity_trust_policy(cluster_name, CLOUDWATCH_AGENT_NAMESPACE, CLOUDWATCH_AGENT_SERVICE_ACCOUNT)


def alarm_topic_key_policy(account_id: str, partition: str) -> dict[str, Any]:
    """KMS key policy of the alarm topic's key: the account administers it, CloudWatch alarms may use it.

    CloudWatch cannot publish to a topic encrypted with the AWS-managed `aws/sns` key (it cannot use
    that key), so the topic gets a customer-managed key that names CloudWatch. The CloudWatch statement is
    the one AWS documents, without a condition (AWS Knowledge Center "How do I configure a CloudWatch alarm
    with an encrypted SNS topic?", repost.aws/knowledge-center/cloudwatch-configure-alarm-sns,
    `Allow_CloudWatch_for_CMK`, here without underscores, which IAM Sids do not allow): SNS calls KMS on CloudWatch's behalf, and a source-account condition is not
    documented for that call, so it could silently drop every notification. AWS's `kms:GenerateDataKey*` is
    narrowed to the two calls SNS makes for a service publishing to an encrypted topic (AWS End User Messaging
    SMS guide "Amazon SNS access policy", "Access policy for encrypted Amazon SNS topics": `kms:GenerateDataKey`,
    `kms:Decrypt`). Least privilege is kept by the
    topic policy (`alarm_topic_policy`), which admits only this cluster's alarms; the key encrypts nothing
    but this topic. In a key policy `Resource: "*"` means this key.
    """
    return {
        "Version": IAM_POLICY_VERSION,
        "Statement": [
            {
                "Sid": "AllowAccountToAdministerKey",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
                "Action": "kms:*",
                "Resource": "*",
            },
            {
                "Sid": "AllowCloudWatchForCMK",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
                "Resource": "*",
            },
        ],
    }


def alarm_topic_policy(
    topic_arn: str, account_id: str, partition: str, region: str, cluster_name: str
) -> dict[str, Any]:
    """SNS topic policy: CloudWatch may publish only for this cluster's alarms in this account and region.

    AWS Knowledge Center "Why didn't I receive an SNS notification for my CloudWatch alarm trigger?"
    (repost.aws/knowledge-center/cloudwatch-receive-sns-for-alarm-trigger, `Allow_Publish_Alarms` with
    `ArnLike aws:SourceArn`) and the SNS Developer Guide "Example cases for Amazon SNS access control"
    (`aws:SourceAccount` for service principals). Principals of the account keep their IAM permissions:
    within one account an identity policy suffices where the resource policy does not deny.
    """
    return {
        "Version": IAM_POLICY_VERSION,
        "Statement": [
            {
                "Sid": "AllowPublishAlarms",
                "Effect": "Allow",
                "Principal": {"Service": "cloudwatch.amazonaws.com"},
                "Action": "sns:Publish",
                "Resource": topic_arn,
                "Condition": {
                    "ArnLike": {
                        "aws:SourceArn": f"arn:{partition}:cloudwatch:{region}:{account_id}:alarm:{cluster_name}-*"
                    },
                    "StringEquals": {"aws:SourceAccount": account_id},
                },
            }
        ],
    }


def subscription_protocol(endpoint: str) -> str:
    """SNS protocol of one configured subscriber (settings allow e-mail, SQS and Lambda)."""
    if endpoint.startswith("arn:"):
        return endpoint.split(":")[2]  # "sqs" or "lambda"
    return "email"
