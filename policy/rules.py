"""Guardrail rules of the gpu-platform policy pack, as pure functions the tests call without the engine.

Each rule is `fn(resource_type, props) -> violations`: the resource's type token and its input
properties as the engine passes them to a policy (camelCase, plain JSON values), one message per
violation, none for resource types the rule does not cover. Under `pulumi preview` some props are
still unknown; the policy SDK's proxy raises on reading one and reports "can't run during preview"
(advisory) — the same rule then runs on the known value during `pulumi up`. So rules read props
with plain indexing/`.get` and never swallow exceptions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy.proxy import UnknownValueError

from components.facts.constants import (
    GPU_TAINT,
    GPU_TAINT_EFFECT_EKS,
    GPU_TAINT_KEY,
    GPU_TAINT_VALUE,
    HELM_TYPES,
    INSTANCE_GPU_COUNT_LABEL,
    INSTANCE_GPU_MANUFACTURER_LABEL,
)
from components.facts.gpu_catalog import GPU_FAMILIES
from components.facts.placeholders import placeholder_values, placeholders_in
from policy.provider_rules import RULE_NAME as PROVIDER_RULE_NAME
from policy.provider_rules import provider_rule_types, resource_violations

Props = Mapping[str, Any]
Rule = Callable[[str, Props], list[str]]

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
EBS_VOLUME = "aws:ebs/volume:Volume"
EC2_NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
EKS_CLUSTER_COMPONENT = "eks:index:Cluster"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
MANAGED_NODE_GROUP = "eks:index:ManagedNodeGroup"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
SQS_QUEUE = "aws:sqs/queue:Queue"
KMS_KEY = "aws:kms/key:Key"

# Where each workload kind keeps its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "kubernetes:core/v1:Pod": ("spec",),
    "kubernetes:apps/v1:Deployment": ("spec", "template", "spec"),
    "kubernetes:apps/v1:DaemonSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:StatefulSet": ("spec", "template", "spec"),
    "kubernetes:apps/v1:ReplicaSet": ("spec", "template", "spec"),
    "kubernetes:batch/v1:Job": ("spec", "template", "spec"),
    "kubernetes:batch/v1:CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")

# Inputs holding IAM-style policy documents, per resource type ("[]" = every element of a list).
POLICY_DOCUMENT_INPUTS: dict[str, tuple[str, ...]] = {
    "aws:iam/policy:Policy": ("policy",),
    "aws:iam/rolePolicy:RolePolicy": ("policy",),
    "aws:iam/userPolicy:UserPolicy": ("policy",),
    "aws:iam/groupPolicy:GroupPolicy": ("policy",),
    "aws:iam/role:Role": ("assumeRolePolicy", "inlinePolicies[].policy"),
    "aws:sqs/queuePolicy:QueuePolicy": ("policy",),
    "aws:sns/topicPolicy:TopicPolicy": ("policy",),
    KMS_KEY: ("policy",),
}
# AWS KMS "Default key policy" (kms/latest/developerguide/key-policy-default.html, "Allows access to the AWS
# account and enables IAM policies"): `kms:*` for the account root, so IAM policies govern the key and it can
# never become unmanageable. The one wildcard a key policy may grant, and only to its own account's root.
_KEY_POLICY_ROOT = re.compile(r"^arn:aws[a-z-]*:iam::[0-9]{12}:root$")
# Service-scoped wildcards allowed in an Allow: read-only verb families. `*`, `<service>:*` and any other
# prefix (`iam:Put*`, `ec2:Create*`) would silently grant write or permissions-management actions that AWS
# adds to the service later.
READ_ONLY_WILDCARDS = re.compile(r"^[a-z0-9-]+:(Describe|Get|List)[A-Za-z]*\*$")

_EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
_DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")
# Karpenter's well-known labels that are absent on instances without NVIDIA GPUs.
_GPU_LABELS = (INSTANCE_GPU_COUNT_LABEL, INSTANCE_GPU_MANUFACTURER_LABEL)


# --- reading props ----------------------------------------------------------------------------------------


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str)


def _items(value: Any) -> list[Any]:
    return list(value) if _is_list(value) else []


def _dig(props: Any, *path: str) -> Any:
    value: Any = props
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _is_true(value: Any) -> bool:
    # pulumi-aws types some booleans as strings (LaunchTemplate ebs.encrypted: "true").
    return value is True or (isinstance(value, str) and value.lower() == "true")


def _document(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str) and value.strip():
        document = json.loads(value)
        return document if isinstance(document, Mapping) else None
    return None


# --- IMDSv2 -----------------------------------------------------------------------------------------------


def _metadata_problems(where: str, options: Any) -> list[str]:
    if not isinstance(options, Mapping):
        return [f"{where}: set metadataOptions with httpTokens: required (IMDSv2)"]
    if options.get("httpEndpoint") == "disabled":
        return []  # no instance metadata at all
    problems = []
    if options.get("httpTokens") != "required":
        problems.append(f"{where}.httpTokens is {options.get('httpTokens')!r}; must be 'required' (IMDSv2 only)")
    hop_limit = options.get("httpPutResponseHopLimit")
    if hop_limit is not None and int(hop_limit) > 1:
        problems.append(
            f"{where}.httpPutResponseHopLimit is {hop_limit}; must be 1 so pods cannot reach node credentials"
        )
    return problems


def imdsv2_required(resource_type: str, props: Props) -> list[str]:
    """EC2 instances (launch templates, Karpenter node classes, node groups) answer IMDSv2 only."""
    if resource_type == LAUNCH_TEMPLATE:
        return _metadata_problems("metadataOptions", props.get("metadataOptions"))
    if resource_type == EC2_NODE_CLASS:
        return _metadata_problems("spec.metadataOptions", _dig(props, "spec", "metadataOptions"))
    if (
        resource_type == MANAGED_NODE_GROUP
        and not props.get("launchTemplate")
        and not _is_true(props.get("enableIMDSv2"))
    ):
        return ["without a launchTemplate, set enableIMDSv2: true"]
    if resource_type == EKS_NODE_GROUP and not props.get("launchTemplate"):
        return ["use a launchTemplate with metadataOptions.httpTokens: required (IMDSv2)"]
    return []


# --- encryption -------------------------------------------------------------------------------------------


def _block_device_problems(where: str, mappings: Any) -> list[str]:
    ebs_mappings = [m for m in _items(mappings) if isinstance(m, Mapping) and m.get("ebs") is not None]
    if not ebs_mappings:
        return [f"{where}: declare the root EBS volume with encrypted: true"]
    return [
        f"{where}[{m.get('deviceName')}].ebs.encrypted must be true"
        for m in ebs_mappings
        if not _is_true(m["ebs"].get("encrypted"))
    ]


def encryption_at_rest(resource_type: str, props: Props) -> list[str]:
    """EBS volumes are encrypted; Kubernetes secrets are envelope-encrypted with KMS; queues use SSE."""
    if resource_type == LAUNCH_TEMPLATE:
        return _block_device_problems("blockDeviceMappings", props.get("blockDeviceMappings"))
    if resource_type == EC2_NODE_CLASS:
        return _block_device_problems("spec.blockDeviceMappings", _dig(props, "spec", "blockDeviceMappings"))
    if resource_type == EBS_VOLUME and not _is_true(props.get("encrypted")):
        return ["encrypted must be true"]
    if resource_type == EKS_CLUSTER_COMPONENT and not props.get("encryptionConfigKeyArn"):
        return ["set encryptionConfigKeyArn: Kubernetes secrets must be envelope-encrypted with a KMS key"]
    if resource_type == EKS_CLUSTER:
        config = props.get("encryptionConfig")
        if not isinstance(config, Mapping) or "secrets" not in _items(config.get("resources")):
            return ["set encryptionConfig with resources: [secrets] and a KMS key"]
    if resource_type == SQS_QUEUE and not (_is_true(props.get("sqsManagedSseEnabled")) or props.get("kmsMasterKeyId")):
        return ["enable server-side encryption (sqsManagedSseEnabled or kmsMasterKeyId)"]
    return []


# --- pinned images, charts and AMIs -----------------------------------------------------------------------


def image_problem(image: str) -> str | None:
    """Why an image reference is not pinned, or None: a digest, or an explicit tag other than `latest`."""
    name, _, digest = image.partition("@")
    if digest:
        return None if _DIGEST.match(digest) else f"{image}: malformed digest"
    last_part = name.rsplit("/", 1)[-1]
    if ":" not in last_part:
        return f"{image}: no tag (pulls :latest); pin a version tag or digest"
    if last_part.rsplit(":", 1)[1] == "latest":
        return f"{image}: ':latest' is not pinned; use a version tag or digest"
    return None


def _pod_spec_images(resource_type: str, props: Props) -> list[tuple[str, str]]:
    spec = _dig(props, *POD_SPEC_PATHS[resource_type])
    found = []
    for list_name in CONTAINER_LISTS:
        for container in _items(_dig(spec, list_name)):
            found.append((f"{list_name}[{container.get('name')}]", str(container.get("image", ""))))
    return found


def pinned_versions(resource_type: str, props: Props) -> list[str]:
    """Container images, Helm charts and Karpenter AMI aliases name an exact version."""
    if resource_type in POD_SPEC_PATHS:
        return [
            f"{where}: {problem}"
            for where, image in _pod_spec_images(resource_type, props)
            if (problem := image_problem(image))
        ]
    if resource_type in HELM_TYPES:
        chart, version = str(props.get("chart", "")), props.get("version")
        if chart.endswith(".tgz"):
            return []  # a chart archive is one exact version
        if not isinstance(version, str) or not _EXACT_VERSION.match(version):
            return [f"chart {chart}: version {version!r} is not an exact version (e.g. 1.14.1)"]
    if resource_type == EC2_NODE_CLASS:
        return [
            f"spec.amiSelectorTerms alias {term['alias']}: pin an AMI release (e.g. al2023@v20260724)"
            for term in _items(_dig(props, "spec", "amiSelectorTerms"))
            if isinstance(term, Mapping) and str(term.get("alias", "")).endswith("@latest")
        ]
    return []


# --- GPU taint --------------------------------------------------------------------------------------------


def _is_gpu_node_group(props: Props) -> bool:
    families = {str(t).split(".", 1)[0] for t in _items(props.get("instanceTypes"))}
    return "NVIDIA" in str(props.get("amiType") or "").upper() or bool(families & set(GPU_FAMILIES))


def _excludes_gpus(requirements: Any) -> bool:
    """A NodePool requirement that rules out every NVIDIA GPU instance."""
    for requirement in _items(requirements):
        key, operator = requirement.get("key"), requirement.get("operator")
        values = [str(v).lower() for v in _items(requirement.get("values"))]
        if key in _GPU_LABELS and operator == "DoesNotExist":
            return True
        if key == _GPU_LABELS[1] and operator == "NotIn" and "nvidia" in values:
            return True
    return False


def gpu_nodes_tainted(resource_type: str, props: Props) -> list[str]:
    """Every node that can have an NVIDIA GPU carries the GPU taint, so only GPU pods land there."""
    if resource_type in (MANAGED_NODE_GROUP, EKS_NODE_GROUP) and _is_gpu_node_group(props):
        wanted = {"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": GPU_TAINT_EFFECT_EKS}
        taints = [dict(t) for t in _items(props.get("taints"))]
        if wanted not in taints:
            return [f"GPU node group must carry the taint {wanted} (has {taints})"]
    if resource_type == NODE_POOL:
        template_spec = _dig(props, "spec", "template", "spec")
        if _excludes_gpus(_dig(template_spec, "requirements")):
            return []
        taints = [dict(t) for t in _items(_dig(template_spec, "taints"))]
        if dict(GPU_TAINT) not in taints:
            return [
                f"NodePool can launch NVIDIA GPU nodes: spec.template.spec.taints must include {dict(GPU_TAINT)} "
                f"(or exclude GPUs with {_GPU_LABELS[0]} DoesNotExist)"
            ]
    return []


# --- IAM actions ------------------------------------------------------------------------------------------


def _documents_of(resource_type: str, props: Props) -> list[tuple[str, Mapping[str, Any]]]:
    found = []
    for path in POLICY_DOCUMENT_INPUTS.get(resource_type, ()):
        if "[]." in path:
            list_name, key = path.split("[].")
            values = [(f"{list_name}[{i}].{key}", item.get(key)) for i, item in enumerate(_items(props.get(list_name)))]
        else:
            values = [(path, props.get(path))]
        for where, value in values:
            document = _document(value)
            if document is not None:
                found.append((where, document))
    return found


def wildcard_problems(statement: Mapping[str, Any]) -> list[str]:
    """Why one statement's Allow is too wide, or []: Deny statements may use any wildcard."""
    if statement.get("Effect") != "Allow":
        return []
    if "NotAction" in statement:
        return ["Allow with NotAction grants every other action"]
    actions = statement.get("Action", [])
    return [
        f"action {action!r} is a wildcard; list the actions (read-only Describe*/Get*/List* prefixes are allowed)"
        for action in ([actions] if isinstance(actions, str) else _items(actions))
        if "*" in action and not READ_ONLY_WILDCARDS.match(action)
    ]


def _is_default_key_administration(resource_type: str, statement: Mapping[str, Any]) -> bool:
    """The KMS default key policy statement: `kms:*` on the key for the account root alone, no condition."""
    principal = statement.get("Principal")
    return (
        resource_type == KMS_KEY
        and statement.get("Action") == "kms:*"
        and statement.get("Resource") == "*"
        and isinstance(principal, Mapping)
        and set(principal) == {"AWS"}
        and isinstance(principal["AWS"], str)
        and bool(_KEY_POLICY_ROOT.match(principal["AWS"]))
    )


def no_wildcard_iam_actions(resource_type: str, props: Props) -> list[str]:
    """IAM, queue, topic and key policies never Allow `*` or `<service>:*` (bar the KMS default key policy)."""
    problems = []
    for where, document in _documents_of(resource_type, props):
        statements = document.get("Statement", [])
        for index, statement in enumerate([statements] if isinstance(statements, Mapping) else _items(statements)):
            if _is_default_key_administration(resource_type, statement):
                continue
            label = statement.get("Sid") or f"Statement[{index}]"
            problems += [f"{where} {label}: {problem}" for problem in wildcard_problems(statement)]
    return problems


def no_documentation_placeholders(resource_type: str, props: Props) -> list[str]:
    """Example account IDs and documentation CIDRs from the shipped stack files must not reach AWS.

    Unlike the other rules it scans every input, so it passes over values unknown in a preview instead
    of giving up on the whole resource: the stack file's literals are known, and caught, in the preview.
    """
    return [
        f"{path}: {value!r} holds documentation value(s) {placeholders_in(value)}; replace them before a real deploy"
        for path, value in placeholder_values(props, skip=(UnknownValueError,))
    ]


# --- the pack -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyRule:
    name: str
    description: str
    check: Rule
    resource_types: tuple[str, ...]  # what the rule inspects (the tests assert the plans exercise it)


RULES: tuple[PolicyRule, ...] = (
    PolicyRule(
        "imdsv2-required",
        "Launch templates, EC2NodeClasses and node groups require IMDSv2 tokens (hop limit 1).",
        imdsv2_required,
        (LAUNCH_TEMPLATE, EC2_NODE_CLASS, MANAGED_NODE_GROUP, EKS_NODE_GROUP),
    ),
    PolicyRule(
        "encryption-at-rest",
        "EBS volumes (launch templates, EC2NodeClasses) are encrypted; EKS secrets use KMS; SQS uses SSE.",
        encryption_at_rest,
        (LAUNCH_TEMPLATE, EC2_NODE_CLASS, EBS_VOLUME, EKS_CLUSTER_COMPONENT, EKS_CLUSTER, SQS_QUEUE),
    ),
    PolicyRule(
        "pinned-versions",
        "Container images, Helm charts and Karpenter AMI aliases are pinned (no :latest, no ranges).",
        pinned_versions,
        (*POD_SPEC_PATHS, *HELM_TYPES, EC2_NODE_CLASS),
    ),
    PolicyRule(
        "gpu-nodes-tainted",
        f"GPU node groups and NodePools carry the {GPU_TAINT_KEY}={GPU_TAINT_VALUE} taint.",
        gpu_nodes_tainted,
        (MANAGED_NODE_GROUP, EKS_NODE_GROUP, NODE_POOL),
    ),
    PolicyRule(
        "no-wildcard-iam-actions",
        "IAM, queue, topic and KMS key policies never Allow '*' or '<service>:*' actions "
        "(a key policy may give its account root kms:*, the KMS default key policy).",
        no_wildcard_iam_actions,
        tuple(POLICY_DOCUMENT_INPUTS),
    ),
    PolicyRule(
        "no-documentation-placeholders",
        "No input holds an AWS example account ID or an RFC 5737 / RFC 3849 documentation address.",
        no_documentation_placeholders,
        # Every resource is scanned; these are the ones the stack files' ARNs and CIDRs reach today.
        (EKS_CLUSTER_COMPONENT, EKS_CLUSTER),
    ),
    PolicyRule(
        PROVIDER_RULE_NAME,
        "Every aws:* input passes the AWS provider's own validators (components/facts/aws_rules/table.py); "
        "python -m policy.check also holds pulumi-eks's children to them.",
        resource_violations,
        provider_rule_types(),
    ),
)


def violations(resource_type: str, props: Props) -> dict[str, list[str]]:
    """Every rule's violations for one resource (rule name -> messages), rules without any left out."""
    found = {rule.name: rule.check(resource_type, props) for rule in RULES}
    return {name: messages for name, messages in found.items() if messages}
