"""`observability`: GPU health signals and repair, GPU metrics, the dashboard and alarms."""

from __future__ import annotations

import re
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from components.settings.fields import IgnoredUnless, SettingsModel

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-zA-Z]{2,}$")
# SNS subscription endpoints an alarm can reach without a confirmation link: SQS queues and Lambda functions.
_SUBSCRIBER_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):(?P<service>sqs|lambda):[a-z0-9-]+:[0-9]{12}:(?P<resource>.+)$"
)
# SQS queue names: 1-80 letters, digits, '-' and '_'; a FIFO queue's name ends in `.fifo` (SQS CreateQueue API).
_QUEUE_NAME = re.compile(r"^[A-Za-z0-9_-]{1,80}$")
# Lambda function ARNs, optionally with a version or alias (Lambda API reference, `FunctionName`).
_FUNCTION = re.compile(r"^function:[A-Za-z0-9_-]{1,64}(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$")
# Every supported region (components/settings/fields.py) is in the commercial partition, where the topic lives.
STACK_PARTITION = "aws"


def _alarm_subscriber(value: str) -> str:
    """An e-mail address, a standard SQS queue ARN or a Lambda function ARN in the `aws` partition (what the
    standard alarm topic can deliver to; not a `.fifo` queue)."""
    if _EMAIL.match(value):
        return value
    found = _SUBSCRIBER_ARN.match(value)
    if not found:
        raise ValueError(
            f"'{value}' must be an e-mail address or an SQS queue / Lambda function ARN "
            "(e.g. ops@example.com, arn:aws:sqs:us-west-2:123456789012:gpu-alerts)"
        )
    partition, service, resource = found.group("partition", "service", "resource")
    if partition != STACK_PARTITION:
        # SNS delivers within its own partition only: a topic in `aws` cannot reach `aws-cn` or `aws-us-gov`.
        raise ValueError(
            f"'{value}' is in partition {partition}; the alarm topic is in {STACK_PARTITION} (every supported "
            f"region), and SNS does not deliver across partitions: use an arn:{STACK_PARTITION}: endpoint"
        )
    if service == "sqs" and resource.endswith(".fifo"):
        # AWS SNS developer guide, fifo-message-delivery.html: SQS FIFO queues take messages from SNS FIFO
        # topics; the alarm topic is a standard topic (CloudWatch alarm actions publish to standard topics).
        raise ValueError(
            f"'{value}' is an SQS FIFO queue; the alarm topic is a standard SNS topic, which cannot deliver to FIFO "
            "queues: subscribe a standard queue (a name without '.fifo')"
        )
    if service == "sqs" and not _QUEUE_NAME.match(resource):
        raise ValueError(f"'{value}': an SQS queue name is 1-80 letters, digits, '-' and '_' (got {resource!r})")
    if service == "lambda" and not _FUNCTION.match(resource):
        raise ValueError(
            f"'{value}' is not a Lambda function ARN; SNS delivers to functions only: "
            "arn:aws:lambda:<region>:<account>:function:<name>[:<version or alias>]"
        )
    return value


class ObservabilitySettings(SettingsModel):
    """`gpu-platform:observability`: GPU health signals and repair, GPU metrics, dashboard and alarms."""

    gpu_metrics: bool = False
    """CloudWatch Observability add-on (Container Insights, NVIDIA GPU metrics), GPU dashboard, alarms."""
    node_repair: bool = False
    """EKS node monitoring agent, Karpenter node repair, EKS node auto repair on the managed groups."""
    idle_gpu_threshold_percent: Annotated[int, Field(ge=1, le=100), IgnoredUnless("gpu_metrics")] = 10
    """Idle-GPU alarm: more GPU nodes run than the managed floor, warm slots and demo hold, and the busiest
    GPU stays below this utilisation for idleGpuHours; needs gpuMetrics."""
    idle_gpu_hours: Annotated[int, Field(ge=1, le=72), IgnoredUnless("gpu_metrics")] = 4
    """Hours the idle-GPU alarm waits; needs gpuMetrics."""
    stuck_gpu_node_minutes: Annotated[int, Field(ge=10, le=1440), IgnoredUnless("gpu_metrics")] = 30
    """Stuck-GPU-node alarm: a GPU node advertises no nvidia.com/gpu this long; needs gpuMetrics."""
    alarm_subscribers: Annotated[
        list[Annotated[str, AfterValidator(_alarm_subscriber)]], Field(max_length=20), IgnoredUnless("gpu_metrics")
    ] = []
    """SNS subscribers of the alarm topic: e-mails must confirm, queues and functions need a policy allowing
    SNS; needs gpuMetrics."""

    @model_validator(mode="after")
    def _subscribers_once(self) -> Self:
        # (Subscribers, like the alarm settings, are rejected without gpuMetrics: `IgnoredUnless` above.)
        repeated = sorted({s for s in self.alarm_subscribers if self.alarm_subscribers.count(s) > 1})
        if repeated:
            raise ValueError(f"alarmSubscribers: each subscriber once (repeated: {', '.join(repeated)})")
        return self
