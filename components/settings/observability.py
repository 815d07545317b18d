"""`observability`: GPU health signals and repair, GPU metrics, the dashboard and alarms."""

from __future__ import annotations

import re
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from components.settings.fields import SettingsModel

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-zA-Z]{2,}$")
# SNS subscription endpoints an alarm can reach without a confirmation link: SQS queues and Lambda functions.
_SUBSCRIBER_ARN = re.compile(r"^arn:aws(-[a-z]+)*:(sqs|lambda):[a-z0-9-]+:[0-9]{12}:[\w:.-]+$")


def _alarm_subscriber(value: str) -> str:
    """An e-mail address, or an SQS queue or Lambda function ARN."""
    if not (_EMAIL.match(value) or _SUBSCRIBER_ARN.match(value)):
        raise ValueError(
            f"'{value}' must be an e-mail address or an SQS queue / Lambda function ARN "
            "(e.g. ops@example.com, arn:aws:sqs:us-west-2:123456789012:gpu-alerts)"
        )
    return value


class ObservabilitySettings(SettingsModel):
    """`gpu-platform:observability`: GPU health signals and repair, GPU metrics, dashboard and alarms."""

    gpu_metrics: bool = False
    """CloudWatch Observability add-on (Container Insights, NVIDIA GPU metrics), GPU dashboard, alarms."""
    node_repair: bool = False
    """EKS node monitoring agent, Karpenter node repair, EKS node auto repair on the managed groups."""
    idle_gpu_threshold_percent: Annotated[int, Field(ge=1, le=100)] = 10
    """Idle-GPU alarm: more GPU nodes run than the managed floor, warm slots and demo hold, and the busiest
    GPU stays below this utilisation for idleGpuHours; needs gpuMetrics."""
    idle_gpu_hours: Annotated[int, Field(ge=1, le=72)] = 4
    """Hours the idle-GPU alarm waits; needs gpuMetrics."""
    stuck_gpu_node_minutes: Annotated[int, Field(ge=10, le=1440)] = 30
    """Stuck-GPU-node alarm: a GPU node advertises no nvidia.com/gpu this long; needs gpuMetrics."""
    alarm_subscribers: Annotated[list[Annotated[str, AfterValidator(_alarm_subscriber)]], Field(max_length=20)] = []
    """SNS subscribers of the alarm topic: e-mails must confirm, queues and functions need a policy allowing
    SNS; needs gpuMetrics."""

    @model_validator(mode="after")
    def _subscribers_once(self) -> Self:
        # (Subscribers, like the alarm settings, are rejected without gpuMetrics: config_rules._DEPENDENT_KEYS.)
        repeated = sorted({s for s in self.alarm_subscribers if self.alarm_subscribers.count(s) > 1})
        if repeated:
            raise ValueError(f"alarmSubscribers: each subscriber once (repeated: {', '.join(repeated)})")
        return self
