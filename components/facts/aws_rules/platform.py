"""Provider rules for the platform inputs (EKS, IAM, KMS, CloudWatch, EventBridge, Logs; SNS and SQS: messaging).

Transcribed from hashicorp/terraform-provider-aws (the v6 line that pulumi-aws 7.x bridges), each entry citing
the file and the schema function under `internal/service/`. Pulumi renames a few inputs (`alarm_name` is
`name`, `topic_arn` is `topic`); the paths here are the Pulumi ones, the citations name the upstream attribute.
"""

from __future__ import annotations

from components.facts.aws_rules.validators import (
    InputRule,
    arn,
    cidr,
    iam_policy_json,
    int_at_least,
    int_between,
    int_in,
    int_in_or_divisible,
    json_text,
    length,
    not_empty,
    not_pattern,
    number,
    one_of,
    pattern,
    rule,
    unconstrained,
)

_EKS = "internal/service/eks/"
_IAM = "internal/service/iam/"
_CW = "internal/service/cloudwatch/"
_EVENTS = "internal/service/events/"

# validClusterName (internal/service/eks/validate.go), after the EKS API's CreateCluster.name.
_CLUSTER_NAME = (length(1, 100), pattern(r"^[0-9A-Za-z][0-9A-Za-z_-]*$"))
_CLUSTER_NAME_SOURCE = _EKS + "validate.go validClusterName"
# validResourceName(max) (internal/service/iam/validate.go).
_IAM_NAME = pattern(r"^[\w+=,.@-]*$")
# validateRuleName / validateTargetID (internal/service/events/validate.go).
_EVENTS_NAME = (length(1, 64), pattern(r"^[0-9A-Za-z_.-]+$"))
# metric_alarm.go: the statistic enum or an extended-statistic pattern.
_STATISTIC = pattern(
    r"^(SampleCount|Average|Sum|Minimum|Maximum)$|^((p|(tm)|(wm)|(tc)|(ts))((\d{1,2}(\.\d{1,2})?)|(100))|(IQM)"
    r"|(((TM)|(WM)|(PR)|(TC)|(TS)))\((\d+(\.\d+)?%?)?:(\d+(\.\d+)?%?)?\))$"
)
_ALARM = _CW + "metric_alarm.go resourceMetricAlarm"
_PERIOD = int_in_or_divisible((1, 5, 10, 20, 30), 60)
_SEMVER = (
    r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
    r"(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
# aws-sdk-go-v2 service/eks/types AMITypes (enum.Validate[types.AMITypes] in node_group.go).
_AMI_TYPES = one_of(
    "AL2_x86_64", "AL2_x86_64_GPU", "AL2_ARM_64", "CUSTOM",
    "BOTTLEROCKET_ARM_64", "BOTTLEROCKET_x86_64", "BOTTLEROCKET_ARM_64_FIPS", "BOTTLEROCKET_x86_64_FIPS",
    "BOTTLEROCKET_ARM_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA",
    "WINDOWS_CORE_2019_x86_64", "WINDOWS_FULL_2019_x86_64", "WINDOWS_CORE_2022_x86_64", "WINDOWS_FULL_2022_x86_64",
    "AL2023_x86_64_STANDARD", "AL2023_ARM_64_STANDARD", "AL2023_x86_64_NEURON", "AL2023_x86_64_NVIDIA",
    "AL2023_ARM_64_NVIDIA",
)  # fmt: skip

EKS_CLUSTER = "aws:eks/cluster:Cluster"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_ADDON = "aws:eks/addon:Addon"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
POD_IDENTITY_ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
IAM_ROLE = "aws:iam/role:Role"
IAM_POLICY = "aws:iam/policy:Policy"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
KMS_KEY = "aws:kms/key:Key"
KMS_ALIAS = "aws:kms/alias:Alias"
DASHBOARD = "aws:cloudwatch/dashboard:Dashboard"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
METRIC_ALARM = "aws:cloudwatch/metricAlarm:MetricAlarm"

PLATFORM_RULES: dict[tuple[str, str], InputRule] = {
    # --- EKS -------------------------------------------------------------------------------------------------
    (EKS_CLUSTER, "name"): rule(_CLUSTER_NAME_SOURCE, *_CLUSTER_NAME),
    (EKS_CLUSTER, "version"): unconstrained(_EKS + "cluster.go resourceCluster"),
    (EKS_CLUSTER, "enabledClusterLogTypes[]"): rule(
        _EKS + "cluster.go resourceCluster: enum.Validate[types.LogType]",
        one_of("api", "audit", "authenticator", "controllerManager", "scheduler"),
    ),
    (EKS_CLUSTER, "accessConfig.authenticationMode"): rule(
        _EKS + "cluster.go resourceCluster: enum.Validate[types.AuthenticationMode]",
        one_of("API", "API_AND_CONFIG_MAP", "CONFIG_MAP"),
    ),
    (EKS_CLUSTER, "upgradePolicy.supportType"): rule(
        _EKS + "cluster.go resourceCluster: enum.Validate[types.SupportType]", one_of("STANDARD", "EXTENDED")
    ),
    (EKS_CLUSTER, "encryptionConfig.resources[]"): rule(
        _EKS + "cluster.go resourceCluster: resources_Values (consts.go)", one_of("secrets")
    ),
    (EKS_CLUSTER, "encryptionConfig.provider.keyArn"): unconstrained(_EKS + "cluster.go resourceCluster"),
    (EKS_CLUSTER, "vpcConfig.publicAccessCidrs[]"): rule(
        _EKS + "cluster.go resourceCluster: verify.ValidCIDRNetworkAddress", cidr()
    ),
    (EKS_CLUSTER, "vpcConfig.subnetIds[]"): unconstrained(_EKS + "cluster.go resourceCluster"),
    (EKS_NODE_GROUP, "nodeGroupName"): rule(_EKS + "node_group.go resourceNodeGroup", length(0, 63)),
    (EKS_NODE_GROUP, "clusterName"): rule(_CLUSTER_NAME_SOURCE, *_CLUSTER_NAME),
    (EKS_NODE_GROUP, "amiType"): rule(
        _EKS + "node_group.go resourceNodeGroup: enum.Validate[types.AMITypes]", _AMI_TYPES
    ),
    (EKS_NODE_GROUP, "instanceTypes[]"): unconstrained(_EKS + "node_group.go resourceNodeGroup"),
    (EKS_NODE_GROUP, "labels.*"): unconstrained(_EKS + "node_group.go resourceNodeGroup"),
    (EKS_NODE_GROUP, "launchTemplate.id"): rule(
        "internal/verify/validate.go ValidLaunchTemplateID (node_group.go)", length(1, 255), pattern(r"^lt\-[0-9a-z]+$")
    ),
    (EKS_NODE_GROUP, "launchTemplate.version"): rule(_EKS + "node_group.go resourceNodeGroup", length(1, 255)),
    (EKS_NODE_GROUP, "scalingConfig.desiredSize"): rule(_EKS + "node_group.go resourceNodeGroup", int_at_least(0)),
    (EKS_NODE_GROUP, "scalingConfig.minSize"): rule(_EKS + "node_group.go resourceNodeGroup", int_at_least(0)),
    (EKS_NODE_GROUP, "scalingConfig.maxSize"): rule(_EKS + "node_group.go resourceNodeGroup", int_at_least(1)),
    (EKS_NODE_GROUP, "subnetIds[]"): unconstrained(_EKS + "node_group.go resourceNodeGroup"),
    (EKS_NODE_GROUP, "version"): unconstrained(_EKS + "node_group.go resourceNodeGroup"),
    (EKS_ADDON, "addonName"): rule(_EKS + "addon.go resourceAddon: validation.NoZeroValues", not_empty()),
    (EKS_ADDON, "addonVersion"): rule(_EKS + "addon.go resourceAddon: semantic version", pattern(_SEMVER)),
    (EKS_ADDON, "clusterName"): rule(_CLUSTER_NAME_SOURCE, *_CLUSTER_NAME),
    (EKS_ADDON, "configurationValues"): unconstrained(_EKS + "addon.go resourceAddon (preflight --check addon-config)"),
    (EKS_ADDON, "resolveConflictsOnCreate"): rule(_EKS + "addon.go resourceAddon", one_of("NONE", "OVERWRITE")),
    (EKS_ADDON, "resolveConflictsOnUpdate"): rule(
        _EKS + "addon.go resourceAddon: enum.Validate[types.ResolveConflicts]", one_of("OVERWRITE", "NONE", "PRESERVE")
    ),
    # Inputs the plans do not set yet, read from the same files (add-ons with Pod Identity, e.g. EBS CSI).
    (EKS_ADDON, "podIdentityAssociations[].roleArn"): rule(_EKS + "addon.go resourceAddon: verify.ValidARN", arn()),
    (EKS_ADDON, "podIdentityAssociations[].serviceAccount"): unconstrained(_EKS + "addon.go resourceAddon"),
    (EKS_ADDON, "serviceAccountRoleArn"): rule(_EKS + "addon.go resourceAddon: verify.ValidARN", arn()),
    (ACCESS_ENTRY, "clusterName"): rule(_CLUSTER_NAME_SOURCE, *_CLUSTER_NAME),
    (ACCESS_ENTRY, "principalArn"): rule(_EKS + "access_entry.go resourceAccessEntry: verify.ValidARN", arn()),
    (ACCESS_ENTRY, "type"): rule(
        _EKS + "access_entry.go resourceAccessEntry: accessEntryType_Values (consts.go)",
        one_of("EC2", "EC2_LINUX", "EC2_WINDOWS", "FARGATE_LINUX", "HYBRID_LINUX", "STANDARD"),
    ),
    (ACCESS_ENTRY, "kubernetesGroups[]"): unconstrained(_EKS + "access_entry.go resourceAccessEntry"),
    (ACCESS_POLICY_ASSOCIATION, "clusterName"): rule(_CLUSTER_NAME_SOURCE, *_CLUSTER_NAME),
    (ACCESS_POLICY_ASSOCIATION, "policyArn"): rule(
        _EKS + "access_policy_association.go resourceAccessPolicyAssociation: verify.ValidARN", arn()
    ),
    (ACCESS_POLICY_ASSOCIATION, "principalArn"): rule(
        _EKS + "access_policy_association.go resourceAccessPolicyAssociation: verify.ValidARN", arn()
    ),
    (ACCESS_POLICY_ASSOCIATION, "accessScope.type"): unconstrained(
        _EKS + "access_policy_association.go resourceAccessPolicyAssociation"
    ),
    (ACCESS_POLICY_ASSOCIATION, "accessScope.namespaces[]"): unconstrained(
        _EKS + "access_policy_association.go resourceAccessPolicyAssociation"
    ),
    (POD_IDENTITY_ASSOCIATION, "roleArn"): rule(
        _EKS + "pod_identity_association.go podIdentityAssociationResource.Schema: fwtypes.ARNType", arn()
    ),
    **{
        (POD_IDENTITY_ASSOCIATION, field): unconstrained(
            _EKS + "pod_identity_association.go podIdentityAssociationResource.Schema"
        )
        for field in ("clusterName", "namespace", "serviceAccount")
    },
    # --- IAM, KMS --------------------------------------------------------------------------------------------
    (IAM_ROLE, "name"): rule(
        _IAM + "role.go ResourceRole: validResourceName(roleNameMaxLen=64)", length(1, 64), _IAM_NAME
    ),
    (IAM_ROLE, "description"): rule(
        _IAM + "role.go ResourceRole",
        length(0, 1000),
        not_pattern("[\u201c\u2018]", "no specially formatted quotes \u201c \u2018"),
    ),
    (IAM_ROLE, "assumeRolePolicy"): rule(_IAM + "role.go ResourceRole: validation.StringIsJSON", json_text()),
    (IAM_ROLE, "path"): rule(_IAM + "role.go ResourceRole", length(0, 512)),
    (IAM_ROLE, "maxSessionDuration"): rule(_IAM + "role.go ResourceRole", int_between(3600, 43200)),
    (IAM_ROLE, "permissionsBoundary"): rule(_IAM + "role.go ResourceRole: verify.ValidARN", arn()),
    (IAM_ROLE, "managedPolicyArns[]"): rule(_IAM + "role.go ResourceRole: verify.ValidARN", arn()),
    (IAM_POLICY, "name"): rule(
        _IAM + "policy.go resourcePolicy: validResourceName(policyNameMaxLen=128)", length(1, 128), _IAM_NAME
    ),
    (IAM_POLICY, "description"): unconstrained(_IAM + "policy.go resourcePolicy"),
    (IAM_POLICY, "policy"): rule(_IAM + "policy.go resourcePolicy: verify.ValidIAMPolicyJSON", iam_policy_json()),
    (ROLE_POLICY_ATTACHMENT, "policyArn"): unconstrained(
        _IAM + "role_policy_attachment.go ResourceRolePolicyAttachment"
    ),
    (ROLE_POLICY_ATTACHMENT, "role"): unconstrained(_IAM + "role_policy_attachment.go ResourceRolePolicyAttachment"),
    (ROLE_POLICY, "policy"): rule(
        _IAM + "role_policy.go resourceRolePolicy: verify.ValidIAMPolicyJSON", iam_policy_json()
    ),
    # validRolePolicyRole (validate.go): 1-128 characters, the role's name, not its ARN.
    (ROLE_POLICY, "role"): rule(
        _IAM + "validate.go validRolePolicyRole",
        length(1, 128),
        pattern(r"[\w+=,.@-]+"),
        not_pattern(r"^arn:", "the role's name, not its ARN"),
    ),
    (KMS_KEY, "description"): rule("internal/service/kms/key.go resourceKey", length(0, 8192)),
    (KMS_KEY, "deletionWindowInDays"): rule("internal/service/kms/key.go resourceKey", int_between(7, 30)),
    (KMS_KEY, "policy"): rule(
        "internal/service/kms/key.go resourceKey: sdkv2.IAMPolicyDocumentSchemaOptionalComputed "
        "(internal/sdkv2/schema.go: validation.StringIsJSON)",
        json_text(),
    ),
    (KMS_ALIAS, "name"): rule(
        "internal/service/kms/validate.go validNameForResource",
        pattern(r"^(alias/)[a-zA-Z0-9/_-]+$"),
        not_pattern(r"^(alias/aws/)", "cannot begin with the reserved prefix alias/aws/"),
    ),
    (KMS_ALIAS, "targetKeyId"): unconstrained("internal/service/kms/alias.go ResourceAlias"),
    # --- CloudWatch, EventBridge, Logs -------------------------------------------------------------------------
    (DASHBOARD, "dashboardName"): rule(
        _CW + "validate.go validDashboardName", length(1, 255), pattern(r"^[0-9A-Za-z_-]+$")
    ),
    (DASHBOARD, "dashboardBody"): rule(_CW + "dashboard.go resourceDashboard: validation.StringIsJSON", json_text()),
    (EVENT_RULE, "name"): rule(_EVENTS + "validate.go validateRuleName", *_EVENTS_NAME),
    (EVENT_RULE, "description"): rule(_EVENTS + "rule.go resourceRule", length(0, 512)),
    (EVENT_RULE, "eventPattern"): rule(
        _EVENTS + "rule.go validateEventPatternValue (normalized JSON of 4096 or fewer)", json_text(), length(0, 4096)
    ),
    (EVENT_TARGET, "rule"): rule(_EVENTS + "validate.go validateRuleName", *_EVENTS_NAME),
    (EVENT_TARGET, "targetId"): rule(_EVENTS + "validate.go validateTargetID", *_EVENTS_NAME),
    (EVENT_TARGET, "arn"): rule(_EVENTS + "target.go resourceTarget: verify.ValidARN", arn()),
    (LOG_GROUP, "name"): rule(
        "internal/service/logs/validate.go validLogGroupName", length(1, 512), pattern(r"^[0-9A-Za-z_./#-]+$")
    ),
    (LOG_GROUP, "retentionInDays"): rule(
        "internal/service/logs/group.go resourceGroup",
        int_in(
            0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653
        ),
    ),
    (METRIC_ALARM, "name"): rule(_ALARM + ": alarm_name", length(1, 255)),
    (METRIC_ALARM, "alarmDescription"): rule(_ALARM, length(0, 1024)),
    (METRIC_ALARM, "alarmActions[]"): rule(_ALARM + ": verify.ValidARN", arn()),
    (METRIC_ALARM, "okActions[]"): rule(_ALARM + ": verify.ValidARN", arn()),
    (METRIC_ALARM, "comparisonOperator"): rule(
        _ALARM + ": enum.Validate[types.ComparisonOperator]",
        one_of(
            "GreaterThanOrEqualToThreshold",
            "GreaterThanThreshold",
            "LessThanThreshold",
            "LessThanOrEqualToThreshold",
            "LessThanLowerOrGreaterThanUpperThreshold",
            "LessThanLowerThreshold",
            "GreaterThanUpperThreshold",
        ),
    ),
    (METRIC_ALARM, "evaluationPeriods"): rule(_ALARM, int_at_least(1)),
    (METRIC_ALARM, "threshold"): rule(_ALARM + ": schema.TypeFloat", number()),
    (METRIC_ALARM, "treatMissingData"): rule(
        _ALARM + ": missingData_Values (case-insensitive)",
        pattern(r"(?i)^(breaching|notBreaching|ignore|missing)$"),
    ),
    (METRIC_ALARM, "metricName"): rule(_ALARM + ": metric_name", length(1, 255)),
    (METRIC_ALARM, "namespace"): rule(_ALARM + ": namespace", length(1, 255), pattern(r"[^:].*")),
    (METRIC_ALARM, "period"): rule(_ALARM + ": period", _PERIOD),
    (METRIC_ALARM, "statistic"): rule(
        _ALARM + ": enum.Validate[types.Statistic]", one_of("SampleCount", "Average", "Sum", "Minimum", "Maximum")
    ),
    (METRIC_ALARM, "dimensions.*"): unconstrained(_ALARM + ": dimensions"),
    (METRIC_ALARM, "metricQueries[].id"): rule(_ALARM, length(1, 255)),
    (METRIC_ALARM, "metricQueries[].expression"): rule(_ALARM, length(1, 1024)),
    (METRIC_ALARM, "metricQueries[].label"): unconstrained(_ALARM),
    (METRIC_ALARM, "metricQueries[].metric.metricName"): rule(_ALARM, length(1, 255)),
    (METRIC_ALARM, "metricQueries[].metric.namespace"): rule(_ALARM, length(1, 255), pattern(r"[^:].*")),
    (METRIC_ALARM, "metricQueries[].metric.period"): rule(_ALARM, _PERIOD),
    (METRIC_ALARM, "metricQueries[].metric.stat"): rule(_ALARM + ": Statistic enum or extended statistic", _STATISTIC),
    (METRIC_ALARM, "metricQueries[].metric.dimensions.*"): unconstrained(_ALARM),
}
