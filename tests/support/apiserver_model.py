"""What the kube-apiserver does to a pod before the GPU guard's ValidatingAdmissionPolicy sees it, modelled offline.

The guard's tests judge a pod as the API server will see it at validation time, not only as written. For a
pod CREATE/UPDATE (upstream kubernetes/kubernetes, paths at the cited commits; unchanged in substance across
the EKS minors this project supports):

1. decode: every `resource.Quantity` is parsed (`staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go`,
   `ParseQuantity`); an unparsable one is a 400 before anything else;
2. defaulting: `SetDefaults_Pod` copies limits into missing requests, for Pods only, never templates
   (`pkg/apis/core/v1/defaults.go`);
3. the mutating admission plugins EKS enables (awsdocs/amazon-eks-user-guide `platform-versions`: LimitRanger,
   DefaultTolerationSeconds, ExtendedResourceToleration, ...), all on the `pods` resource only, never a
   subresource or a workload template: LimitRanger (`plugin/pkg/admission/limitranger`, CREATE only) fills
   container defaults from the namespace's LimitRanges; DefaultTolerationSeconds
   (`plugin/pkg/admission/defaulttolerationseconds/admission.go`) adds the 300 s not-ready/unreachable
   NoExecute tolerations; ExtendedResourceToleration
   (`plugin/pkg/admission/extendedresourcetoleration/admission.go`) adds `{key: <resource>, operator: Exists,
   effect: NoSchedule}` for every extended resource in the requests of a container or init container -
   whatever the quantity, 0 included;
4. field validation (`rest.BeforeCreate`/`BeforeUpdate` -> the strategy's `Validate`), which runs *before*
   the validating admission chain (`staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`,
   `Store.Create`: "at this point we have a fully formed object. It is time to call the validators"): an
   extended resource must be a non-negative whole number (`pkg/apis/core/validation/validation.go`,
   `validateResourceQuantityValue`: `MilliValue() % 1000 == 0`), its request must equal its limit and a
   request needs a limit; ephemeral containers may set no resources and cannot be set on create;
5. the policy sees the object converted to unstructured: a Quantity becomes `Quantity.ToUnstructured()` =
   `String()`, the string cached at parse (kept only when already canonical) or the canonical form
   (`CanonicalizeBytes`), which is `"0"` for every zero.

So by the time the guard runs, an `nvidia.com/gpu` quantity is a whole number >= 0 written as a string, and
it is zero exactly when that string is `"0"`: the guard compares strings, and `tests/labs/test_apiserver_model.py`
checks this model of `resource.Quantity` against upstream's own table (`quantity_test.go`).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import cel
from cel.stdlib import add_stdlib_to_context

Manifest = dict[str, Any]

# --- resource.Quantity ---------------------------------------------------------------------------

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_OF_DECIMAL_EXPONENT = {exponent: suffix for suffix, exponent in _DECIMAL_SUFFIXES.items()}
_SUFFIX_OF_BINARY_EXPONENT = {exponent: suffix for suffix, exponent in _BINARY_SUFFIXES.items()}
_SUFFIX_CHARS = "eEinumkKMGTP"
_NANO = Fraction(1, 10**9)
_MAX_INT64 = 2**63 - 1
_MAX_INT64_FACTORS = 18


class QuantityError(ValueError):
    """The API server cannot decode the quantity (a 400 before admission)."""


@dataclass(frozen=True)
class Quantity:
    value: Fraction
    format: str
    cached: str | None = None  # `Quantity.s`: the input string, kept only when it already is canonical

    def string(self) -> str:
        """`Quantity.String()` = what `ToUnstructured` hands to CEL."""
        return self.cached if self.cached is not None else canonical(self.value, self.format)


def _split(text: str) -> tuple[bool, str, str, str, str]:
    """`parseQuantityString`: (positive, value, num, denom, suffix)."""
    positive, pos, end = True, 0, len(text)
    if text[:1] in ("-", "+"):
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos].isdigit():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos].isdigit():
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    value, suffix_start = text[:pos], pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos].isdigit():
        pos += 1
    if pos < end:
        raise QuantityError(f"quantities must match '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}")
    return positive, value, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, str]:
    """`quantitySuffixer.interpret`: (base, exponent, format)."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and re.fullmatch(r"[+-]?[0-9]+", suffix[1:]):
        exponent = int(suffix[1:])
        if abs(exponent) <= 2**31 - 1:
            return 10, exponent, DECIMAL_EXPONENT
    raise QuantityError(f"unable to parse quantity's suffix: {suffix!r}")


def parse_quantity(raw: str | int | float) -> Quantity:
    """`UnmarshalJSON` + `ParseQuantity`: a JSON number is parsed from its literal text (0.0 -> "0.0")."""
    text = raw.strip() if isinstance(raw, str) else json.dumps(raw)
    if not text:
        raise QuantityError("empty quantity")
    if text == "0":
        return Quantity(Fraction(0), DECIMAL_SI, "0")
    positive, value, num, denom, suffix = _split(text)
    base, exponent, fmt = _interpret(suffix)
    sign = 1 if positive else -1
    # The int64 fast path, which keeps the input string when it is already canonical.
    scale, mantissa, precision = 0, 1, -1
    if fmt in (DECIMAL_SI, DECIMAL_EXPONENT):
        scale, precision = exponent, _MAX_INT64_FACTORS - (len(num) + len(denom))
    elif exponent >= 0 and not denom:
        mantissa = 1 << exponent
        precision = 15 - len(num) - int(exponent * 3 / 10) - 1
    if precision >= 0 and scale - len(denom) >= -9:
        scale -= len(denom)
        shifted = num + denom
        result = int(shifted) * mantissa
        if result <= _MAX_INT64:
            keep = (
                exponent % 10 == 0 and int(shifted) & 0x07 != 0
                if fmt == BINARY_SI
                else scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
            )
            amount = sign * result * Fraction(10) ** scale
            return Quantity(amount, fmt, text if keep else None)
    # The inf.Dec path: exact, then non-zero values rounded up (away from zero) to a nano.
    digits = value.lstrip("+-")
    whole, _, fraction_digits = digits.partition(".")
    magnitude = Fraction(int(whole or "0") * 10 ** len(fraction_digits) + int(fraction_digits or "0"))
    magnitude /= 10 ** len(fraction_digits)
    magnitude *= Fraction(base) ** exponent
    if magnitude:
        nanos = magnitude / _NANO
        magnitude = (nanos.numerator // nanos.denominator + (nanos.denominator != 1)) * _NANO
    if fmt == BINARY_SI and magnitude > _MAX_INT64:
        magnitude = Fraction(_MAX_INT64)
    if fmt == BINARY_SI and 0 < magnitude < 1:
        fmt = DECIMAL_SI
    return Quantity(sign * magnitude, fmt)


def _decimal_mantissa(value: Fraction) -> tuple[int, int]:
    """value = mantissa * 10**exponent, exponent a multiple of 3 and as large as possible without losing digits."""
    mantissa, exponent = value, 0
    while mantissa.denominator != 1:
        mantissa, exponent = mantissa * 10, exponent - 1
    whole = int(mantissa)
    while whole % 10 == 0:
        whole, exponent = whole // 10, exponent + 1
    while exponent % 3:
        whole, exponent = whole * 10, exponent - 1
    return whole, exponent


def canonical(value: Fraction, fmt: str) -> str:
    """`Quantity.CanonicalizeBytes`: no fractional digits, the largest suffix that loses nothing; 0 is "0"."""
    if value == 0:
        return "0"
    if fmt == BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        mantissa, power = int(value), 0
        while mantissa % 1024 == 0 and power < 6:
            mantissa, power = mantissa // 1024, power + 1
        return f"{mantissa}{_SUFFIX_OF_BINARY_EXPONENT.get(power * 10, '')}"
    mantissa, exponent = _decimal_mantissa(value)
    if fmt == DECIMAL_SI and exponent in _SUFFIX_OF_DECIMAL_EXPONENT:
        return f"{mantissa}{_SUFFIX_OF_DECIMAL_EXPONENT[exponent]}"
    return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"


def milli_value(quantity: Quantity) -> int:
    """`Quantity.MilliValue()`: ceil(value * 1000)."""
    scaled = quantity.value * 1000
    return -((-scaled.numerator) // scaled.denominator)


# --- the admission sequence ----------------------------------------------------------------------

CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_DEFAULTED_LISTS = ("containers", "initContainers")  # defaulting, LimitRanger and ExtendedResourceToleration
DEFAULT_TOLERATION_SECONDS = 300
_NODE_CONDITION_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def is_extended_resource(name: str) -> bool:
    """`helper.IsExtendedResourceName`: fully qualified, outside kubernetes.io, not a quota `requests.` name."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


@dataclass
class Request:
    """One admission request: a Pod (or a workload) in a namespace, with the namespace's LimitRanges."""

    obj: Manifest
    namespace: Manifest
    operation: str = "CREATE"
    subresource: str = ""
    old_object: Manifest | None = None
    limit_ranges: list[Manifest] = field(default_factory=list)


@dataclass
class Outcome:
    """`invalid`: field-validation errors (the request fails before the policy); `denied`: the policy's messages."""

    seen: Manifest
    invalid: list[str]
    denied: list[str]

    @property
    def admitted(self) -> bool:
        return not self.invalid and not self.denied


def pod_spec_of(obj: Manifest) -> Manifest:
    """The pod spec of a Pod, a workload's template, or a CronJob's job template."""
    spec: Manifest = obj["spec"]
    if obj["kind"] == "Pod":
        return spec
    if obj["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    template_spec: Manifest = spec["template"]["spec"]
    return template_spec


def _containers(spec: Manifest, lists: tuple[str, ...] = CONTAINER_LISTS) -> list[Manifest]:
    return [container for name in lists for container in spec.get(name) or []]


def _decode(spec: Manifest) -> list[str]:
    """Parse every quantity in place (to `Quantity`); the errors a decode would return."""
    errors = []
    for container in _containers(spec):
        for kind, resources in (container.get("resources") or {}).items():
            if kind not in ("limits", "requests"):
                continue
            for name, raw in resources.items():
                try:
                    resources[name] = parse_quantity(raw)
                except QuantityError as error:
                    errors.append(f"{container['name']}.resources.{kind}[{name}]: {error}")
    return errors


def _default_requests(spec: Manifest) -> None:
    for container in _containers(spec, _DEFAULTED_LISTS):
        resources = container.get("resources") or {}
        if "limits" in resources:
            requests = resources.setdefault("requests", {})
            for name, quantity in resources["limits"].items():
                requests.setdefault(name, quantity)


def _limit_ranger(spec: Manifest, limit_ranges: list[Manifest]) -> None:
    for limit_range in limit_ranges:
        for item in limit_range["spec"]["limits"]:
            if item["type"] != "Container":
                continue
            for container in _containers(spec, _DEFAULTED_LISTS):
                resources = container.setdefault("resources", {})
                for kind, defaults in (
                    ("requests", item.get("defaultRequest", {})),
                    ("limits", item.get("default", {})),
                ):
                    for name, raw in defaults.items():
                        resources.setdefault(kind, {}).setdefault(name, parse_quantity(raw))


def _add_toleration(spec: Manifest, toleration: Manifest) -> None:
    """`helper.AddOrUpdateTolerationInPod`: no duplicate of an equal toleration."""
    tolerations = spec.setdefault("tolerations", [])
    if toleration not in tolerations:
        tolerations.append(toleration)


def _default_toleration_seconds(spec: Manifest) -> None:
    for taint in _NODE_CONDITION_TAINTS:
        if not any(
            t.get("key", "") in ("", taint) and t.get("effect", "") in ("", "NoExecute")
            for t in spec.get("tolerations", [])
        ):
            toleration = {"key": taint, "operator": "Exists", "effect": "NoExecute"}
            _add_toleration(spec, {**toleration, "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})


def _extended_resource_toleration(spec: Manifest) -> None:
    names = {
        name
        for container in _containers(spec, _DEFAULTED_LISTS)
        for name in (container.get("resources") or {}).get("requests", {})
        if is_extended_resource(name)
    }
    for name in sorted(names):
        _add_toleration(spec, {"key": name, "operator": "Exists", "effect": "NoSchedule"})


def _validate(request: Request, spec: Manifest) -> list[str]:
    """The slice of `ValidatePodCreate`/`ValidatePodSpec` the guard depends on."""
    errors = []
    is_pod = request.obj["kind"] == "Pod"
    if is_pod and request.operation == "CREATE" and spec.get("ephemeralContainers"):
        errors.append("spec.ephemeralContainers: Forbidden: cannot be set on create")
    if not is_pod and spec.get("ephemeralContainers"):
        errors.append("template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template")
    for container in spec.get("ephemeralContainers") or []:
        if container.get("resources"):
            errors.append(f"{container['name']}.resources: Forbidden: cannot be set for an Ephemeral Container")
    for container in _containers(spec):
        resources = container.get("resources") or {}
        limits, requests = resources.get("limits", {}), resources.get("requests", {})
        for kind, values in (("limits", limits), ("requests", requests)):
            for name, quantity in values.items():
                where = f"{container['name']}.resources.{kind}[{name}]"
                if quantity.value < 0:
                    errors.append(f"{where}: Invalid value: must be greater than or equal to 0")
                elif is_extended_resource(name) and milli_value(quantity) % 1000:
                    errors.append(f"{where}: Invalid value: must be an integer")
        for name, quantity in requests.items():
            if not is_extended_resource(name):
                continue
            if name not in limits:
                errors.append(f"{container['name']}.resources.limits[{name}]: Required value: Limit must be set")
            elif limits[name].value != quantity.value:
                errors.append(f"{container['name']}.resources.requests[{name}]: must be equal to {name} limit")
    return errors


def _to_unstructured(value: Any) -> Any:
    if isinstance(value, Quantity):
        return value.string()
    if isinstance(value, dict):
        return {k: _to_unstructured(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_unstructured(v) for v in value]
    return value


def as_seen_by_admission(request: Request) -> tuple[Manifest, list[str]]:
    """Steps 1-5: the object the validating policy sees, and the errors that would stop the request first."""
    obj = json.loads(json.dumps(request.obj))  # what travels over the wire: no shared sub-objects
    obj.setdefault("metadata", {})["namespace"] = request.namespace["metadata"]["name"]
    spec = pod_spec_of(obj)
    errors = _decode(spec)
    if errors:
        return obj, errors
    pod_proper = obj["kind"] == "Pod" and not request.subresource
    if obj["kind"] == "Pod":
        _default_requests(spec)
    if pod_proper and request.operation == "CREATE":
        _limit_ranger(spec, request.limit_ranges)
    if pod_proper:
        _default_toleration_seconds(spec)
        _extended_resource_toleration(spec)
    return _to_unstructured(obj), _validate(request, spec)


# --- the validating admission policy -------------------------------------------------------------


def with_name_label(namespace: Manifest) -> Manifest:
    """The apiserver labels every namespace with its own name (kubernetes.io/metadata.name)."""
    ns = copy.deepcopy(namespace)
    ns["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = ns["metadata"]["name"]
    return ns


def selector_matches(selector: Manifest, labels: dict[str, str]) -> bool:
    for expression in selector.get("matchExpressions", []):
        present = expression["key"] in labels and labels[expression["key"]] in expression["values"]
        if (expression["operator"] == "In") != present:
            return False
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


@functools.cache
def _program(expression: str) -> cel.Program:
    """A policy expression compiled once per session (the policy is the same for every pod a test admits)."""
    return cel.compile(expression)


def _context(variables: dict[str, Any]) -> cel.Context:
    context = cel.Context(variables=variables)
    add_stdlib_to_context(context)
    return context


def evaluate_policy(seen: Manifest, request: Request, policy: Manifest, binding: Manifest) -> list[str]:
    """The policy's denial messages for the object as admission sees it (empty: admitted or not matched)."""
    namespace = with_name_label(request.namespace)
    labels = namespace["metadata"]["labels"]
    if not selector_matches(policy["spec"]["matchConstraints"]["namespaceSelector"], labels):
        return []
    if not selector_matches(binding["spec"]["matchResources"]["namespaceSelector"], labels):
        return []
    variables = {
        "object": seen,
        "oldObject": request.old_object if request.operation == "UPDATE" else None,
        "request": {
            "operation": request.operation,
            "namespace": namespace["metadata"]["name"],
            "subResource": request.subresource,
        },
        "namespaceObject": namespace,
    }
    # VAP variables are evaluated in order, each seeing the ones before it.
    computed: dict[str, Any] = {}
    for variable in policy["spec"]["variables"]:
        context = _context({**variables, "variables": computed})
        computed[variable["name"]] = _program(variable["expression"]).execute(context)
    denied = []
    for validation in policy["spec"]["validations"]:
        context = _context({**variables, "variables": computed})
        if _program(validation["expression"]).execute(context) is not True:
            denied.append(validation["message"])
    return denied


def admit(request: Request, policy: Manifest, binding: Manifest) -> Outcome:
    """The whole sequence: decode, default, mutate, validate the fields, then run the policy."""
    seen, invalid = as_seen_by_admission(request)
    denied = [] if invalid else evaluate_policy(seen, request, policy, binding)
    return Outcome(seen=seen, invalid=invalid, denied=denied)
