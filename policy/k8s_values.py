"""The Kubernetes API server's value rules that the OpenAPI schemas do not hold: names, labels, annotations.

The strict schemas (kubernetes-validate, the CRDs) type every field, but a name with a capital letter, a label
value of 64 characters or an annotation key with two slashes is a string like any other there; the API
server refuses it at create (422 Invalid). These are its rules, transcribed at the Kubernetes version the
stacks pin (`kubernetesVersion` 1.35 in Pulumi.yaml), kubernetes/apimachinery @ v0.35.0:

- `pkg/util/validation/validation.go` (with `pkg/api/validate/content/dns.go`, `kube.go`, where v0.35 moved
  `IsDNS1123Label`, `IsDNS1123Subdomain`, `IsLabelKey` = `IsQualifiedName` and `IsLabelValue`):
  a DNS-1123 label is at most 63 of `[a-z0-9]([-a-z0-9]*[a-z0-9])?`; a subdomain at most 253 of such labels
  joined by dots; a DNS-1035 label starts with a letter; a label key is `[prefix/]name`, the prefix a
  subdomain and the name at most 63 of `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`; a label value the same
  name pattern or empty, at most 63 characters.
- `pkg/api/validation/objectmeta.go`: `ValidateAnnotations` checks each key as a qualified name, lowercased,
  and `ValidateAnnotationsSize` the total of keys and values against `TotalAnnotationSizeLimitB` (256 KiB);
  `ValidateObjectMetaAccessor` runs the kind's name function on `metadata.name`.
- `pkg/apis/meta/v1/validation/validation.go` `ValidateLabels` (labels, `matchLabels`, a pod's nodeSelector).
- `pkg/api/validation/path/name.go` `IsValidPathSegmentName` (RBAC names: not `.`/`..`, no `/` or `%`).

The name function per kind is the one each kind's validation passes to `ValidateObjectMeta` (`NAME_RULES`).
`python -m policy.check DIR` and every synth run `manifest_violations` over the manifests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import yaml

# The minor these rules were transcribed at; tests/policy/test_k8s_values.py holds the shipped stacks to it.
KUBERNETES_VERSION: Final = "1.35"
K8S: Final = "kubernetes/kubernetes @ v1.35.0"
APIMACHINERY: Final = "kubernetes/apimachinery @ v0.35.0"

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
# fullmatch, not `^...$`: Python's `$` also matches before a final newline, Go's does not.
_DNS1123_LABEL = re.compile(_LABEL)
_DNS1123_SUBDOMAIN = re.compile(rf"{_LABEL}(\.{_LABEL})*")
_DNS1035_LABEL = re.compile("[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile("([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
MAX_LABEL: Final = 63  # DNS1123LabelMaxLength, DNS1035LabelMaxLength, labelKeyMaxLength, LabelValueMaxLength
MAX_SUBDOMAIN: Final = 253  # DNS1123SubdomainMaxLength
TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * (1 << 10)  # objectmeta.go TotalAnnotationSizeLimitB
# batch/validation ValidateCronJob: the controller appends an 11-character `-<timestamp>` to name each Job.
CRONJOB_NAME_MAX: Final = MAX_LABEL - 11

NameRule = Callable[[str], list[str]]


def dns1123_label(value: str) -> list[str]:
    errors = [f"must be no more than {MAX_LABEL} characters"] if len(value) > MAX_LABEL else []
    if not _DNS1123_LABEL.fullmatch(value):
        errors.append(f"a lowercase RFC 1123 label must match '{_LABEL}' (e.g. 'my-name')")
    return errors


def dns1123_subdomain(value: str) -> list[str]:
    errors = [f"must be no more than {MAX_SUBDOMAIN} characters"] if len(value) > MAX_SUBDOMAIN else []
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errors.append(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
            "'.', and must start and end with an alphanumeric character (e.g. 'example.com')"
        )
    return errors


def dns1035_label(value: str) -> list[str]:
    errors = [f"must be no more than {MAX_LABEL} characters"] if len(value) > MAX_LABEL else []
    if not _DNS1035_LABEL.fullmatch(value):
        errors.append(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character"
        )
    return errors


def path_segment_name(value: str) -> list[str]:
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{bad}'" for bad in ("/", "%") if bad in value]


def cronjob_name(value: str) -> list[str]:
    too_long = [f"must be no more than {CRONJOB_NAME_MAX} characters"] if len(value) > CRONJOB_NAME_MAX else []
    return dns1123_subdomain(value) + too_long


def qualified_name(value: str) -> list[str]:
    """A label key (`IsLabelKey`): an optional DNS-subdomain prefix and `/`, then a name of at most 63."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name has at most one '/' (an optional DNS subdomain prefix, e.g. 'example.com/MyName')"]
    errors = []
    if len(parts) == 2:
        prefix = parts[0]
        errors += (
            ["prefix part must be non-empty"] if not prefix else [f"prefix part {m}" for m in dns1123_subdomain(prefix)]
        )
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > MAX_LABEL:
        errors.append(f"name part must be no more than {MAX_LABEL} characters")
    if not _QUALIFIED_NAME.fullmatch(name):
        errors.append(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character"
        )
    return errors


def label_value(value: str) -> list[str]:
    errors = [f"must be no more than {MAX_LABEL} characters"] if len(value) > MAX_LABEL else []
    if not _LABEL_VALUE.fullmatch(value):
        errors.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
            "'.', and must start and end with an alphanumeric character"
        )
    return errors


# (API group, kind) -> the name function its validation passes to ValidateObjectMeta, and where that is.
_CORE = f"{K8S} pkg/apis/core/validation/validation.go"
_GENERIC = f"{APIMACHINERY} pkg/api/validation/generic.go"
NAME_RULES: Final[Mapping[tuple[str, str], tuple[NameRule, str]]] = {
    ("", "Namespace"): (dns1123_label, f"{_GENERIC} ValidateNamespaceName = NameIsDNSLabel"),
    ("", "Service"): (dns1035_label, f"{_CORE} ValidateServiceName = NameIsDNS1035Label"),
    ("", "ServiceAccount"): (dns1123_subdomain, f"{_GENERIC} ValidateServiceAccountName = NameIsDNSSubdomain"),
    ("", "Pod"): (dns1123_subdomain, f"{_CORE} ValidatePodName = NameIsDNSSubdomain"),
    ("", "PodTemplate"): (dns1123_subdomain, f"{_CORE} ValidatePodTemplate: ValidatePodName"),
    ("", "ConfigMap"): (dns1123_subdomain, f"{_CORE} ValidateConfigMapName = NameIsDNSSubdomain"),
    ("", "Secret"): (dns1123_subdomain, f"{_CORE} ValidateSecretName = NameIsDNSSubdomain"),
    ("", "ResourceQuota"): (dns1123_subdomain, f"{_CORE} ValidateResourceQuotaName = NameIsDNSSubdomain"),
    ("", "LimitRange"): (dns1123_subdomain, f"{_CORE} ValidateLimitRangeName = NameIsDNSSubdomain"),
    ("apps", "Deployment"): (dns1123_subdomain, f"{K8S} pkg/apis/apps/validation/validation.go ValidateDeploymentName"),
    ("apps", "DaemonSet"): (dns1123_subdomain, f"{K8S} pkg/apis/apps/validation/validation.go ValidateDaemonSetName"),
    ("batch", "CronJob"): (
        cronjob_name,
        f"{K8S} pkg/apis/batch/validation/validation.go ValidateCronJobCreate: NameIsDNSSubdomain, "
        "'must be no more than 52 characters' (DNS1035LabelMaxLength-11)",
    ),
    **{
        ("rbac.authorization.k8s.io", kind): (
            path_segment_name,
            f"{K8S} pkg/apis/rbac/validation/validation.go ValidateRBACName = path.IsValidPathSegmentName",
        )
        for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
    },
    ("networking.k8s.io", "NetworkPolicy"): (
        dns1123_subdomain,
        f"{K8S} pkg/apis/networking/validation/validation.go ValidateNetworkPolicyName = NameIsDNSSubdomain",
    ),
    ("storage.k8s.io", "StorageClass"): (
        dns1123_subdomain,
        f"{K8S} pkg/apis/storage/validation/validation.go ValidateStorageClass: ValidateClassName = NameIsDNSSubdomain",
    ),
    **{
        ("admissionregistration.k8s.io", kind): (
            dns1123_subdomain,
            f"{K8S} pkg/apis/admissionregistration/validation/validation.go validate{kind}: NameIsDNSSubdomain",
        )
        for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    },
}
# The kinds above are those the plans write, each with its kind's own name function; a kind of a group the API
# server may serve itself (the core group, a dotless group, `*.k8s.io`) without an entry has no known rule
# (an error: add it with its citation). Other groups, `*.x-k8s.io` included (the out-of-tree projects'
# suffix), are custom resources, whose names apiextensions-apiserver checks as DNS subdomains.


def _built_in(group: str) -> bool:
    return "." not in group or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"))


CUSTOM_RESOURCE_RULE: Final = (
    dns1123_subdomain,
    "kubernetes/apiextensions-apiserver @ v0.35.0 pkg/registry/customresource/validator.go: NameIsDNSSubdomain",
)
_LABELS_SOURCE = f"{APIMACHINERY} pkg/apis/meta/v1/validation/validation.go ValidateLabels"
_ANNOTATIONS_SOURCE = f"{APIMACHINERY} pkg/api/validation/objectmeta.go ValidateAnnotations"


def name_rule(api_version: str, kind: str) -> tuple[NameRule, str] | None:
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    if (group, kind) in NAME_RULES:
        return NAME_RULES[(group, kind)]
    return None if _built_in(group) else CUSTOM_RESOURCE_RULE


def label_violations(labels: Any, path: str) -> Iterator[str]:
    for key, value in (labels or {}).items():
        for message in qualified_name(str(key)):
            yield f"{path} key {key!r}: {message} ({_LABELS_SOURCE})"
        for message in label_value(str(value)):
            yield f"{path}[{key}] value {value!r}: {message} ({_LABELS_SOURCE})"


def meta_violations(meta: Any, path: str) -> Iterator[str]:
    """Labels and annotations of one ObjectMeta (an object's or a pod template's)."""
    meta = meta or {}
    yield from label_violations(meta.get("labels"), f"{path}.labels")
    annotations = meta.get("annotations") or {}
    for key in annotations:
        for message in qualified_name(str(key).lower()):
            yield f"{path}.annotations key {key!r}: {message} ({_ANNOTATIONS_SOURCE})"
    size = sum(len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        yield (
            f"{path}.annotations: {size} bytes of keys and values, over the {TOTAL_ANNOTATION_SIZE_LIMIT} "
            f"limit ({APIMACHINERY} pkg/api/validation/objectmeta.go ValidateAnnotationsSize)"
        )


def _nested(obj: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Every (path, value) under `obj`, depth first."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            child = f"{path}.{key}"
            yield child, value
            yield from _nested(value, child)
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _nested(value, f"{path}[{index}]")


_TEMPLATE_META = re.compile(r"(^|\.)(template|jobTemplate)\.metadata$")


def object_violations(obj: Mapping[str, Any]) -> list[str]:
    """Every value rule one Kubernetes object breaks, each naming the field, the value, the rule and its source."""
    kind, api_version = str(obj.get("kind", "")), str(obj.get("apiVersion", ""))
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    found = []
    rule = name_rule(api_version, kind)
    if rule is None:
        found.append(f"metadata.name: no name rule known for {api_version} {kind} (add it to policy/k8s_values.py)")
    else:
        check, source = rule
        found += [f"metadata.name {name!r}: {message} ({source})" for message in check(name)]
    found += meta_violations(meta, "metadata")
    for path, value in _nested({k: v for k, v in obj.items() if k != "metadata"}, ""):
        path = path.removeprefix(".")
        if _TEMPLATE_META.search(path):
            found += meta_violations(value, path)  # pod (and job) templates: ValidateTemplateObjectMeta
        elif path.endswith((".matchLabels", ".nodeSelector")) and isinstance(value, dict):
            # A pod's nodeSelector is a label map; Karpenter's is a list of requirements (its CRD checks those).
            found += label_violations(value, path)
    return found


def manifest_violations(manifests: Mapping[str, Mapping[str, Any]]) -> Iterator[tuple[str, str]]:
    """`(object, message)` for every rule every manifest breaks; `manifests` maps file names to objects."""
    for filename, obj in manifests.items():
        meta = obj.get("metadata") or {}
        where = "/".join(p for p in (str(obj.get("kind")), meta.get("namespace"), meta.get("name")) if p)
        for message in object_violations(obj):
            yield f"{where} (manifests/{filename})", message


RULE_NAME: Final = "k8s-value-rules"


def plan_findings(out_dir: Path) -> list[tuple[str, str, str]]:
    """`(rule, object, message)` for the manifests of a synth `--out` folder, as `python -m policy.check` prints."""
    manifests = {
        path.name: yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted((out_dir / "manifests").glob("*.yaml"))
    }
    return [(RULE_NAME, where, message) for where, message in manifest_violations(manifests)]
