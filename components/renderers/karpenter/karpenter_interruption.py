"""Karpenter interruption handling as plain data: the SQS queue's policy and the EventBridge rules that feed it.

From the official Karpenter 1.14.1 getting-started CloudFormation (`website/content/en/docs/getting-started/
getting-started-with-karpenter/cloudformation.yaml` at tag v1.14.1): `KarpenterInterruptionQueue`, its
`KarpenterInterruptionQueuePolicy` and the five rules. The controller's right to consume the queue is its
`interruption` policy (`karpenter_iam.interruption_policy`). Pure: no Pulumi.
"""

from __future__ import annotations

from typing import Final

from components.renderers.karpenter.karpenter_iam import PolicyDocument, policy_document

# EventBridge rule purpose -> (source, detail-type) Karpenter consumes from the interruption queue.
# Purposes stay <= 10 characters: rule names are f"{cluster}-karpenter-{purpose}" and EventBridge caps
# names at 64 characters (settings cap the cluster name at 43).
INTERRUPTION_EVENTS: Final = {
    "health": ("aws.health", "AWS Health Event"),
    "spot": ("aws.ec2", "EC2 Spot Instance Interruption Warning"),
    "rebalance": ("aws.ec2", "EC2 Instance Rebalance Recommendation"),
    "state": ("aws.ec2", "EC2 Instance State-change Notification"),
    "reserved": ("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
}
INTERRUPTION_QUEUE_RETENTION_SECONDS: Final = 300
INTERRUPTION_QUEUE_TARGET_ID: Final = "KarpenterInterruptionQueueTarget"


def interruption_queue_policy(queue_arn: str) -> PolicyDocument:
    """EventBridge (and SQS) may deliver to the queue; any access without TLS is denied."""
    return policy_document(
        {
            "Effect": "Allow",
            "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
            "Action": "sqs:SendMessage",
            "Resource": queue_arn,
        },
        {
            "Sid": "DenyHTTP",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "sqs:*",
            "Resource": queue_arn,
            "Condition": {"Bool": {"aws:SecureTransport": False}},
        },
        policy_id="EC2InterruptionPolicy",
    )


def interruption_event_pattern(purpose: str) -> dict[str, list[str]]:
    """EventBridge pattern of one interruption rule (default bus)."""
    source, detail_type = INTERRUPTION_EVENTS[purpose]
    return {"source": [source], "detail-type": [detail_type]}
