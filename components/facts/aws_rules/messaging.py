"""Provider rules for the messaging inputs (SNS, SQS): the alarm topic and Karpenter's interruption queue.

Transcribed from hashicorp/terraform-provider-aws like `platform` (same conventions: Pulumi input paths,
upstream file and schema function under `internal/service/` cited per entry).
"""

from __future__ import annotations

from components.facts.aws_rules.validators import (
    InputRule,
    arn,
    int_between,
    json_text,
    one_of,
    pattern,
    rule,
    unconstrained,
)

SNS_TOPIC = "aws:sns/topic:Topic"
SNS_TOPIC_POLICY = "aws:sns/topicPolicy:TopicPolicy"
SNS_SUBSCRIPTION = "aws:sns/topicSubscription:TopicSubscription"
SQS_QUEUE = "aws:sqs/queue:Queue"
SQS_QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"

MESSAGING_RULES: dict[tuple[str, str], InputRule] = {
    # --- SNS, SQS ----------------------------------------------------------------------------------------------
    (SNS_TOPIC, "name"): rule(
        "internal/service/sns/topic.go resourceTopicCustomizeDiff",
        pattern(r"^[0-9A-Za-z_-]{1,256}$|^[0-9A-Za-z_-]{1,251}\.fifo$"),
    ),
    (SNS_TOPIC, "kmsMasterKeyId"): unconstrained("internal/service/sns/topic.go topicSchema"),
    (SNS_TOPIC_POLICY, "arn"): rule("internal/service/sns/topic_policy.go resourceTopicPolicy: verify.ValidARN", arn()),
    (SNS_TOPIC_POLICY, "policy"): rule(
        "internal/service/sns/topic_policy.go resourceTopicPolicy: sdkv2.IAMPolicyDocumentSchemaRequired "
        "(internal/sdkv2/schema.go: validation.StringIsJSON)",
        json_text(),
    ),
    (SNS_SUBSCRIPTION, "protocol"): rule(
        "internal/service/sns/topic_subscription.go subscriptionSchema: SubscriptionProtocol_Values (consts.go)",
        one_of("application", "email", "email-json", "firehose", "http", "https", "lambda", "sms", "sqs"),
    ),
    (SNS_SUBSCRIPTION, "topic"): rule(
        "internal/service/sns/topic_subscription.go subscriptionSchema: topic_arn verify.ValidARN", arn()
    ),
    (SNS_SUBSCRIPTION, "endpoint"): unconstrained("internal/service/sns/topic_subscription.go subscriptionSchema"),
    (SQS_QUEUE, "name"): rule(
        "internal/service/sqs/queue.go resourceQueueCustomizeDiff",
        pattern(r"^[0-9A-Za-z_-]{1,80}$|^[0-9A-Za-z_-]{1,75}\.fifo$"),
    ),
    (SQS_QUEUE, "messageRetentionSeconds"): rule(
        "internal/service/sqs/queue.go queueSchema", int_between(60, 1_209_600)
    ),
    **{
        (SQS_QUEUE, field): rule("internal/service/sqs/queue.go queueSchema", int_between(low, high))
        for field, low, high in (
            ("delaySeconds", 0, 900),
            ("maxMessageSize", 1024, 1_048_576),
            ("visibilityTimeoutSeconds", 0, 43_200),
            ("kmsDataKeyReusePeriodSeconds", 60, 86_400),
        )
    },
    (SQS_QUEUE_POLICY, "policy"): rule(
        "internal/service/sqs/queue_policy.go ResourceQueuePolicy: validation.StringIsJSON", json_text()
    ),
    (SQS_QUEUE_POLICY, "queueUrl"): unconstrained("internal/service/sqs/queue_policy.go ResourceQueuePolicy"),
}
