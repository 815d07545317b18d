"""Validate custom resources offline the way the kube-apiserver would, from the vendored CRD files.

The apiserver checks a custom resource in this order: structural defaults, the openAPIV3Schema
(with unknown fields rejected under `fieldValidation=Strict`), then the `x-kubernetes-validations`
CEL rules. No apiserver runs here, so this module rebuilds that pipeline:

- `crd_to_jsonschema` turns a CRD `openAPIV3Schema` into a strict Draft 7 JSON Schema (general: it is
  also used for the nodeadm NodeConfig CRD, which needs the `preserve_unknown_as_any` tweak);
- `apply_structural_defaults` fills `default`s like the apiserver does before validating;
- the CEL rules are evaluated with `common-expression-language` (`import cel`) plus the Kubernetes
  `find()` regex function; transition rules (those reading `oldSelf`) only run on UPDATE and are skipped.

Public entry point for the Karpenter objects: `validate_custom_resource(obj) -> list[str]`.
The CRDs come from `../shared/schemas/karpenter/v<KARPENTER_VERSION>` next to the repository root; when that folder
is missing the calling test fails if `CI=true` and is skipped otherwise.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cel
import jsonschema
import yaml
from cel.stdlib import add_stdlib_to_context

from components.facts.constants import KARPENTER_VERSION
from tests.conftest import SHARED_DIR, require_present

SHARED_SCHEMAS = SHARED_DIR / "schemas"
# The CRDs of the Karpenter release the program installs: a version bump needs that release's schemas.
KARPENTER_CRD_DIR = SHARED_SCHEMAS / "karpenter" / f"v{KARPENTER_VERSION}"

_INT_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

# ObjectMeta as the apiserver checks it for every custom resource (CRD schemas leave `metadata` as a
# bare object): names are DNS-1123 subdomains, label keys qualified names, label values <= 63 chars.
_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
_LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"
OBJECT_META_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "maxLength": 253, "pattern": _DNS_SUBDOMAIN},
        "namespace": {"type": "string", "maxLength": 63, "pattern": _DNS_SUBDOMAIN},
        "labels": {
            "type": "object",
            "propertyNames": {"maxLength": 316, "pattern": _LABEL_KEY},
            "additionalProperties": {"type": "string", "maxLength": 63, "pattern": _LABEL_VALUE},
        },
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "ownerReferences": {"type": "array", "items": {"type": "object"}},
        "generateName": {"type": "string"},
        "uid": {"type": "string"},
        "resourceVersion": {"type": "string"},
        "generation": {"type": "integer"},
        "creationTimestamp": {"type": ["string", "null"]},
        "deletionTimestamp": {"type": ["string", "null"]},
        "deletionGracePeriodSeconds": {"type": "integer"},
        "managedFields": {"type": "array", "items": {"type": "object"}},
    },
}


def require_schema_dir(path: Path) -> Path:
    """The vendored schema folder, or fail (CI=true) / skip (local checkout without ../shared)."""
    return require_present(path)


# --- openAPIV3Schema -> JSON Schema ------------------------------------------------------------------


def crd_to_jsonschema(openapi_schema: Mapping[str, Any], *, preserve_unknown_as_any: bool = False) -> dict[str, Any]:
    """Convert a CRD structural schema to a strict Draft 7 JSON Schema (the input is not modified).

    jsonschema ignores the `x-kubernetes-*` keys, so only what it would otherwise get wrong is fixed:
    - strict: every object with `properties` and no `additionalProperties` / preserve-unknown-fields gets
      `additionalProperties: false` (the apiserver rejects unknown fields under fieldValidation=Strict);
    - `nullable: true` -> the type also admits null;
    - `x-kubernetes-int-or-string` -> `anyOf: [integer, string]` unless controller-gen already wrote it;
    - `x-kubernetes-list-type: set` -> `uniqueItems: true`.
    `preserve_unknown_as_any`: a `x-kubernetes-preserve-unknown-fields` node without `properties` (a Go
    `runtime.RawExtension`, e.g. nodeadm's `kubelet.config` values) accepts any JSON value, as the server does.
    """

    def convert(node: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(node)
        preserve = bool(out.get("x-kubernetes-preserve-unknown-fields"))
        if preserve_unknown_as_any and preserve and "properties" not in out:
            out.pop("type", None)
        if out.get("x-kubernetes-int-or-string") and "anyOf" not in out and "type" not in out:
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        if out.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"] if isinstance(out["type"], str) else [*out["type"], "null"]
        if out.get("x-kubernetes-list-type") == "set":
            out["uniqueItems"] = True
        if "properties" in out:
            out["properties"] = {key: convert(value) for key, value in out["properties"].items()}
            if "additionalProperties" not in out and not preserve:
                out["additionalProperties"] = False
        if isinstance(out.get("additionalProperties"), Mapping):
            out["additionalProperties"] = convert(out["additionalProperties"])
        if isinstance(out.get("items"), Mapping):
            out["items"] = convert(out["items"])
        for keyword in ("anyOf", "allOf", "oneOf"):
            if keyword in out:
                out[keyword] = [convert(branch) for branch in out[keyword]]
        if isinstance(out.get("not"), Mapping):
            out["not"] = convert(out["not"])
        return out

    return convert(openapi_schema)


def format_checker() -> jsonschema.FormatChecker:
    """Draft 7 formats plus the Kubernetes integer widths (`int32`, `int64`)."""
    checker = jsonschema.FormatChecker(formats=jsonschema.Draft7Validator.FORMAT_CHECKER.checkers)
    for name, (low, high) in _INT_RANGES.items():

        def in_range(instance: object, low: int = low, high: int = high) -> bool:
            return not isinstance(instance, int) or isinstance(instance, bool) or low <= instance <= high

        checker.checks(name)(in_range)
    return checker


# --- structural defaults ----------------------------------------------------------------------------


def apply_structural_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """A copy of `value` with the schema's `default`s filled in, as the apiserver does before validating.

    Defaults apply to absent object properties; a defaulted value is itself defaulted further
    (e.g. NodePool `disruption` -> `{consolidateAfter: 0s}` then `budgets` -> `[{nodes: 10%}]`).
    """
    value = copy.deepcopy(value)
    _default_in_place(value, schema)
    return value


def _default_in_place(value: Any, schema: Mapping[str, Any]) -> None:
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        for key, sub in properties.items():
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        for key, item in value.items():
            if key in properties:
                _default_in_place(item, properties[key])
            elif isinstance(schema.get("additionalProperties"), Mapping):
                _default_in_place(item, schema["additionalProperties"])
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for item in value:
            _default_in_place(item, schema["items"])


# --- CEL (x-kubernetes-validations) -------------------------------------------------------------------


def is_transition_rule(rule: str) -> bool:
    """Rules reading `oldSelf` compare against the stored object: they run on UPDATE only."""
    return re.search(r"\boldSelf\b", rule) is not None


@functools.cache
def compile_rule(rule: str) -> cel.Program:
    """Compile one CEL rule (cached); raises ValueError on syntax the engine does not support."""
    return cel.compile(rule)


def _k8s_find(text: str, pattern: str) -> str:
    """Kubernetes CEL regex library: `s.find(re)` is the first match of `re` in `s`, or ""."""
    match = re.search(pattern, text)
    return match.group(0) if match else ""


def _cel_context(self_value: Any) -> cel.Context:
    context = cel.Context(variables={"self": self_value})
    add_stdlib_to_context(context)
    context.add_function("find", _k8s_find)
    return context


def iter_cel_rules(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every `x-kubernetes-validations` entry of a schema, with the schema path where it sits."""
    for rule in schema.get("x-kubernetes-validations", []):
        yield path or ".", rule
    for key, sub in schema.get("properties", {}).items():
        yield from iter_cel_rules(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), Mapping):
        yield from iter_cel_rules(schema["items"], f"{path}[*]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from iter_cel_rules(schema["additionalProperties"], f"{path}[*]")


def evaluate_cel_rules(value: Any, schema: Mapping[str, Any], path: str = "") -> list[str]:
    """Evaluate every applicable rule with `self` bound to the node it is declared on.

    Also checks `x-kubernetes-list-type: map` key uniqueness, which JSON Schema cannot express.
    A CEL runtime error (e.g. `int('x')`) rejects the object, as on the apiserver.
    """
    errors: list[str] = []
    where = path or "."
    for entry in schema.get("x-kubernetes-validations", []):
        rule = entry["rule"]
        if is_transition_rule(rule):
            continue
        try:
            passed = compile_rule(rule).execute(_cel_context(value))
        except Exception as exc:  # any evaluation failure (e.g. int('x')) rejects the object
            errors.append(f"{where}: CEL error in {rule!r}: {exc}")
            continue
        if passed is not True:
            errors.append(f"{where}: {entry.get('message') or f'failed rule: {rule}'}")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        additional = schema.get("additionalProperties")
        for key, item in value.items():
            if key in properties:
                errors += evaluate_cel_rules(item, properties[key], f"{path}.{key}")
            elif isinstance(additional, Mapping):
                errors += evaluate_cel_rules(item, additional, f"{path}[{key!r}]")
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        if schema.get("x-kubernetes-list-type") == "map":
            keys = schema.get("x-kubernetes-list-map-keys", [])
            seen = [tuple(item.get(k) for k in keys) for item in value if isinstance(item, dict)]
            if len(seen) != len(set(seen)):
                errors.append(f"{where}: duplicate entries for list-map keys {keys}")
        for index, item in enumerate(value):
            errors += evaluate_cel_rules(item, schema["items"], f"{path}[{index}]")
    return errors


# --- CRDs -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServedVersion:
    """One served version of a CRD: its raw structural schema and the compiled strict validator."""

    crd_name: str
    api_version: str
    kind: str
    openapi_schema: dict[str, Any]
    validator: jsonschema.Draft7Validator

    def validate(self, obj: Mapping[str, Any]) -> list[str]:
        defaulted = apply_structural_defaults(obj, self.openapi_schema)
        schema_errors = sorted(self.validator.iter_errors(defaulted), key=lambda e: list(e.absolute_path))
        if schema_errors:
            return [f"{'.'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in schema_errors]
        return evaluate_cel_rules(defaulted, self.openapi_schema)


def load_crd_file(path: Path, *, preserve_unknown_as_any: bool = False) -> list[ServedVersion]:
    """The served versions of every CRD in one YAML file."""
    served = []
    for crd in yaml.safe_load_all(path.read_text()):
        if not crd or crd.get("kind") != "CustomResourceDefinition":
            continue
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            openapi = version["schema"]["openAPIV3Schema"]
            schema = crd_to_jsonschema(openapi, preserve_unknown_as_any=preserve_unknown_as_any)
            if schema.get("properties", {}).get("metadata") == {"type": "object"}:
                schema["properties"]["metadata"] = OBJECT_META_SCHEMA
            schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
            jsonschema.Draft7Validator.check_schema(schema)
            served.append(
                ServedVersion(
                    crd_name=crd["metadata"]["name"],
                    api_version=f"{spec['group']}/{version['name']}",
                    kind=spec["names"]["kind"],
                    openapi_schema=openapi,
                    validator=jsonschema.Draft7Validator(schema, format_checker=format_checker()),
                )
            )
    return served


@functools.cache
def load_crds(directory: Path = KARPENTER_CRD_DIR) -> dict[tuple[str, str], ServedVersion]:
    """(apiVersion, kind) -> served version, for every CRD YAML in `directory`."""
    require_schema_dir(directory)
    versions: dict[tuple[str, str], ServedVersion] = {}
    for path in sorted(directory.glob("*.yaml")):
        for served in load_crd_file(path):
            versions[(served.api_version, served.kind)] = served
    return versions


def validate_custom_resource(obj: dict[str, Any], directory: Path = KARPENTER_CRD_DIR) -> list[str]:
    """Error messages for one custom resource (empty = the apiserver would accept it on CREATE).

    An (apiVersion, kind) no vendored CRD serves is an error, never a silent pass.
    """
    crds = load_crds(directory)
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    if key not in crds:
        served = ", ".join(f"{v}/{k}" for v, k in sorted(crds))
        return [f"<root>: no CRD in {directory} serves apiVersion={key[0]!r} kind={key[1]!r} (served: {served})"]
    return crds[key].validate(obj)
