"""The configuration reference, generated from the settings models: `python -m offline.config_reference`.

Every key a stack file may set, in the form errors print it (`gpu-platform:karpenter.nodePools[].warmGpuSlots`),
with its type and allowed values (Literal choices, Field bounds, the words of each check's docstring), its default
(the model's, or the one `Pulumi.yaml` declares) and its description (the field's attribute docstring).
`docs/configuration.md` is this module's output; tests/offline/test_config_reference.py fails when they differ.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import json
import sys
import textwrap
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from components.facts import gpu_catalog
from components.facts.constants import PROJECT
from components.settings import REGION_KEY, StackSettings

PROJECT_DIR = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Row:
    key: str  # as errors print it: gpu-platform:karpenter.nodePools[].warmGpuSlots
    allowed: str
    default: str
    description: str


@dataclass(frozen=True)
class Section:
    key: str  # the top-level key; "" for the scalar keys at the top
    rows: tuple[Row, ...]


# --- types and allowed values, in words ------------------------------------------------------------------------


def _unwrap(annotation: Any, metadata: Sequence[Any] = ()) -> tuple[Any, list[Any], bool]:
    """(bare type, constraints and validators, optional?) of an annotation, `Annotated` and `| None` removed."""
    found, optional = list(metadata), False
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *extra = get_args(annotation)
            found += [m for item in extra for m in (item.metadata if isinstance(item, FieldInfo) else [item])]
        elif origin in (Union, types.UnionType) and type(None) in get_args(annotation):
            [annotation] = [arg for arg in get_args(annotation) if arg is not type(None)]
            optional = True
        else:
            return annotation, found, optional


def _union_models(annotation: Any) -> list[type[BaseModel]]:
    """The models of a tagged union (e.g. a hub's `auth`: one model per `type`), else []."""
    bare, _, _ = _unwrap(annotation)
    if get_origin(bare) not in (Union, types.UnionType):
        return []
    members = [arg for arg in get_args(bare) if arg is not type(None)]
    return members if all(isinstance(m, type) and issubclass(m, BaseModel) for m in members) else []


def _tag_of(model: type[BaseModel]) -> str:
    """A tagged union member's `type` value (its one Literal choice)."""
    return str(get_args(model.model_fields["type"].annotation)[0])


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The settings model a field holds (directly, optionally or as list items), else None."""
    bare, _, _ = _unwrap(annotation)
    if get_origin(bare) is list:
        bare, _, _ = _unwrap(get_args(bare)[0])
    return bare if isinstance(bare, type) and issubclass(bare, BaseModel) else None


def _lowercase_start(text: str) -> str:
    """'A DNS label' -> 'a DNS label' (not 'IPv4 ...'): the words read inside a table cell."""
    first_word = text.split(" ", 1)[0]
    return text if any(c.isupper() for c in first_word[1:]) else text[:1].lower() + text[1:]


def _check_words(metadata: Sequence[Any]) -> list[str]:
    """The docstring of each check (AfterValidator/BeforeValidator): what the value must be."""
    words = []
    for item in metadata:
        if isinstance(item, AfterValidator | BeforeValidator) and item.func.__doc__:
            words.append(_lowercase_start(" ".join(item.func.__doc__.split()).rstrip(".")))
    return words


def _bounds(metadata: Sequence[Any], unit: str = "") -> str:
    """'0 to 10000', 'at least 2 items', 'at most 256 characters' from Field constraints; '' without any."""
    low = next((m.ge for m in metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in metadata if isinstance(m, annotated_types.Le)), None)
    low = next((m.min_length for m in metadata if isinstance(m, annotated_types.MinLen)), low)
    high = next((m.max_length for m in metadata if isinstance(m, annotated_types.MaxLen)), high)
    suffix = f" {unit.removesuffix('s') if high == 1 or (high is None and low == 1) else unit}" if unit else ""
    if low is not None and high is not None:
        return f"{low} to {high}{suffix}"
    if low is not None:
        return f"at least {low}{suffix}"
    return f"at most {high}{suffix}" if high is not None else ""


def allowed_words(annotation: Any, metadata: Sequence[Any] = (), canonical: dict[type, str] | None = None) -> str:
    """What a value of this type may be, in words."""
    bare, found, _ = _unwrap(annotation, metadata)
    origin = get_origin(bare)
    if origin is Literal:
        return "one of " + ", ".join(f"`{choice}`" for choice in get_args(bare))
    if origin is list:
        items = allowed_words(get_args(bare)[0], (), canonical)
        count = _bounds(found, "items")
        return f"list ({count}) of: {items}" if count else f"list of: {items}"
    if origin is dict:
        key, value = (allowed_words(arg, (), canonical) for arg in get_args(bare))
        return f"mapping; keys: {key}; values: {value}"
    if _union_models(bare):
        tags = ", ".join(f"`{_tag_of(member)}`" for member in _union_models(bare))
        return f"mapping whose `type` is one of {tags} (each type's keys below)"
    if isinstance(bare, type) and issubclass(bare, BaseModel):
        home = (canonical or {}).get(bare)
        return f"mapping with the keys of `{home}`" if home else "mapping (keys below)"
    checks = _check_words(found)
    if bare is bool:
        return "`true` or `false`"
    if bare is int:
        return "; ".join(["whole number", *([_bounds(found)] if _bounds(found) else []), *checks])
    length = _bounds(found, "characters")
    return "; ".join([*(checks or ["text"]), *([length] if length else [])])


# --- defaults ------------------------------------------------------------------------------------------------------


def _flow(value: Any) -> str:
    """A value as YAML flow text, as a stack file would write it."""
    if isinstance(value, BaseModel):
        value = value.model_dump(by_alias=True, exclude_defaults=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{key}: {_flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, str) and yaml.safe_load(value) != value:
        return json.dumps(value)  # "1" stays a string only when quoted
    return str(value)


def default_words(field: FieldInfo, declared: Any = PydanticUndefined) -> str:
    """The default of a field: the model's, else the one `Pulumi.yaml` declares; 'required' without either."""
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required" if declared is PydanticUndefined else f"`{_flow(declared)}` (Pulumi.yaml)"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, BaseModel) and value == type(value)():
        return "the defaults below"
    return f"`{_flow(value)}`"


# --- walking the models --------------------------------------------------------------------------------------------


def _fields(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, FieldInfo]]:
    for name, field in model.model_fields.items():
        yield f"{prefix}{field.alias or name}", field


def _descriptions(model: type[BaseModel]) -> dict[str, str]:
    """Each field's description by its key: the `description=` given, else its attribute docstring."""
    docstrings = attribute_docstrings(model)
    return {
        field.alias or name: " ".join((field.description or docstrings.get(name, "")).split())
        for name, field in model.model_fields.items()
    }


@functools.cache
def attribute_docstrings(model: type) -> dict[str, str]:
    """The string right under each annotated attribute, read from the source of the model and its bases.

    Read here rather than by pydantic (`use_attribute_docstrings`), which parses every model's source at import:
    a quarter of the settings' import time on every synth, for text only this reference prints.
    """
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not issubclass(cls, BaseModel) or cls is BaseModel:
            continue
        try:
            [definition] = ast.parse(textwrap.dedent(inspect.getsource(cls))).body
        except (OSError, TypeError):  # no source (built in a REPL): nothing to read
            continue
        assert isinstance(definition, ast.ClassDef)
        body = definition.body
        for statement, following in itertools.pairwise(body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                found[statement.target.id] = inspect.cleandoc(following.value.value)
    return found


def _canonical_homes(model: type[BaseModel]) -> dict[type, str]:
    """Each nested model's shallowest key (ties: the first in declaration order): its keys are listed there."""
    homes: dict[type, str] = {}
    queue = [(model, "")]
    while queue:
        current, prefix = queue.pop(0)
        for key, field in _fields(current, prefix):
            nested = _model_of(field.annotation)
            if nested is not None and nested not in homes:
                homes[nested] = key
                queue.append((nested, f"{key}{_items(field)}."))
    return homes


def _rows(model: type[BaseModel], prefix: str, homes: dict[type, str]) -> Iterator[Row]:
    descriptions = _descriptions(model)
    for key, field in _fields(model, prefix):
        nested = _model_of(field.annotation)
        here_is_home = nested is not None and homes.get(nested) == key
        # A model listed at another key points there instead of repeating its keys.
        pointers = {} if here_is_home else {m: _qualified(k) for m, k in homes.items()}
        yield Row(
            _qualified(key),
            allowed_words(field.annotation, field.metadata, pointers),
            default_words(field),
            descriptions[key.removeprefix(prefix)],
        )
        if nested is not None and here_is_home:
            yield from _rows(nested, f"{key}{_items(field)}.", homes)
        for member in _union_models(field.annotation):
            # Each member's keys, said once per `type` that has them (the `type` key itself: the row above).
            tag = _tag_of(member)
            for row in _rows(member, f"{key}.", homes):
                if not row.key.endswith(".type"):
                    yield Row(row.key, row.allowed, row.default, f"(type `{tag}`) {row.description}")


def _qualified(key: str) -> str:
    """`karpenter.nodePools[].name` -> `gpu-platform:karpenter.nodePools[].name`; `region` -> `aws:region`."""
    return REGION_KEY if key == "region" else f"{PROJECT}:{key}"


def _items(field: FieldInfo) -> str:
    """'[]' for a list field (its items' keys read `key[].child`), else ''."""
    return "[]" if get_origin(_unwrap(field.annotation)[0]) is list else ""


def _declared_defaults(project_dir: Path) -> dict[str, Any]:
    """Defaults `Pulumi.yaml` declares for scalar keys (the CLI applies them; the models may have none)."""
    project = yaml.safe_load((project_dir / "Pulumi.yaml").read_text(encoding="utf-8"))
    return {key: spec["default"] for key, spec in (project.get("config") or {}).items() if "default" in spec}


def sections(project_dir: Path = PROJECT_DIR) -> list[Section]:
    """The scalar top-level keys first, then one section per structured key, in the models' order."""
    rows = list(_rows(StackSettings, "", _canonical_homes(StackSettings)))
    declared = _declared_defaults(project_dir)
    scalars: list[Row] = []
    structured: list[Section] = []
    for key, field in _fields(StackSettings, ""):
        [own] = [row for row in rows if row.key == _qualified(key)]
        if key in declared:
            own = Row(own.key, own.allowed, default_words(field, declared[key]), own.description)
        if _model_of(field.annotation) is None:
            scalars.append(own)
        else:
            nested = [row for row in rows if row.key.startswith((own.key + ".", own.key + "[]."))]
            structured.append(Section(own.key, (own, *nested)))
    return [Section("", tuple(scalars)), *structured]


def undescribed_fields(model: type[BaseModel] = StackSettings, prefix: str = "") -> list[str]:
    """Keys whose field has no attribute docstring (so no description in the reference)."""
    missing = []
    descriptions = _descriptions(model)
    for key, field in _fields(model, prefix):
        if not descriptions[key.removeprefix(prefix)]:
            missing.append(_qualified(key))
        nested = _model_of(field.annotation)
        if nested is not None:
            missing += undescribed_fields(nested, f"{key}{_items(field)}.")
        for member in _union_models(field.annotation):
            missing += [k for k in undescribed_fields(member, f"{key}.") if not k.endswith(".type")]
    return missing


# --- the document ----------------------------------------------------------------------------------------------------

INTRO = """\
# Configuration reference

<!-- Generated from the settings models in components/settings/: do not edit by hand. After changing a
     settings field, run `.venv/bin/python -m offline.config_reference > docs/configuration.md`
     (tests/offline/test_config_reference.py fails while this file differs from what the models generate). -->

Stack files set keys under `config:` in the `gpu-platform:` namespace, plus `aws:region`. Scalar keys are
declared with their defaults in `Pulumi.yaml`; structured keys default as below. Every mistake stops the synth
(exit 2) and `pulumi up` (before any resource) with one line per offending key path, e.g.
`gpu-platform:karpenter.nodePools[0].gpuLimit: must be between 1 and 1000 (got 0)`. Key paths below write
`[]` for "every item of the list"; errors name the index.

**`gpuNodes` vs `gpuNodeGroup`.** `gpuNodes.*` is how every GPU node is built, whoever launches it (kubelet
limits, root volume, pre-pulled images), in Karpenter's EC2NodeClass and in the managed group's launch template
alike. `gpuNodeGroup.*` is only the EKS managed GPU node group (on/off, instance types, capacity type, sizes);
Karpenter's GPU capacity is set per pool under `karpenter.nodePools`.

## Rules for every key

- **Spelling**: unknown keys are rejected with the closest known key as a hint; so are keys in an unknown
  namespace (`gpu-platfrom:demo`: only `gpu-platform:`, `aws:`, `kubernetes:`, `pulumi:` are read), keys above
  `config:` instead of under it, and any key set twice in one file (file, line, key). Keys are read by their
  camelCase name only, at every level: `min_size` or `min-size` is an unknown key, named with its camelCase
  spelling (`did you mean 'minSize'?`).
- **Tagged choices**: a block chosen by its `type` (e.g. `labs[].hub.auth`) names a wrong or missing `type` at
  that key (`gpu-platform:labs[0].hub.auth.type`), with the allowed values and the closest one.
- **Images**: every image key (`gpuNodes.prePullImages`, `demo.image`, `labs[].hub.image`) starts with its
  registry host (`docker.io/tensorflow/tensorflow:2.12.0-gpu`, not `tensorflow/tensorflow:...`): GPU nodes
  pre-pull with `ctr images pull`, which adds no default registry.
- **Empty is not a value**: `key:` with nothing after it (or `null`) is an error, never the string `"null"` and
  never the default; remove the key to get its default.
- **Types as YAML reads them**: scalars follow YAML 1.2 as the Pulumi CLI reads them: `yes`/`on` and unquoted
  dates (`2027-06-30`) stay text, only `true`/`false` are booleans. A number where text is expected is rejected
  with "quote the value"; in `tags` whole numbers and booleans are taken as their text (`cost-center: 1234`), a
  float must be quoted (`1.50` would become `1.5`).
- **Nothing is silently ignored**: settings of a feature that is off are errors, not dropped: `karpenter.*` with
  `karpenter.enabled: false`, `gpuNodeGroup.*` with `gpuNodeGroup.enabled: false`, `demo.*` while `demo.enabled`
  is `false` (its default), `cluster.publicAccessCidrs` with a private endpoint,
  `network.vpcCidr/availabilityZones/natGateways` with `network.existing`, `failRequestsGreaterThanOne` with
  sharing strategy `none` (stack or pool),
  `observability.idleGpuThresholdPercent/idleGpuHours/stuckGpuNodeMinutes/alarmSubscribers` while
  `observability.gpuMetrics` is `false` (no metrics, no alarms), and `karpenter.nodePools[].warmSlotShape` with
  `warmGpuSlots: 0`. To switch a feature off, set only its `enabled: false` (the settings stay in git history);
  an error rather than a warning, because a warning in a long `pulumi up` log is how a GPU pool disappears from
  prod unnoticed.
- **No secrets**: no `gpu-platform:` key (nor `aws:region`) can hold a `secure:` value: every one ends up in
  resource names, tags, ARNs or Kubernetes objects in clear text. Other provider keys (`aws:secretKey`, ...) may
  be secrets.
- **Errors name the key to change**: unordered sizes name `desiredSize` (or `maxSize` when `minSize > maxSize`),
  a repeated pool name or admin ARN is named by its index, and a mistyped choice gets the closest allowed value
  (`spot` -> `SPOT`). Across keys: a lab's sessions in class at the same time, plus the demo's pods when the
  demo runs in that lab, must fit the lab's `gpuSlots` (named at the later session's `learners`, with the
  minute of the week they meet); two hubs may not share a `hostname`; a pool may not mix GPU counts unless it
  sets `allowMixedGpuCounts: true`.
- **Warnings**: what is valid but likely not meant is printed by the synth summary as `WARNING: <key path>: ...`
  and does not stop it: a hub whose `maxHours` is shorter than a class of its own lab (the notebook stops mid-class;
  a short cap can be meant, so it is not an error).
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(rows: Sequence[Row]) -> list[str]:
    lines = ["| key | type / allowed | default | what it does |", "|---|---|---|---|"]
    lines += [f"| `{r.key}` | {_cell(r.allowed)} | {_cell(r.default)} | {_cell(r.description)} |" for r in rows]
    return lines


def _instance_types_table() -> list[str]:
    """The catalog's GPU instance types, the values `instanceTypes` and `instanceFamilies` accept."""
    by_size = sorted(
        gpu_catalog.GPU_INSTANCE_TYPES,
        key=lambda t: (gpu_catalog.family_of(t), gpu_catalog.vcpus(t), gpu_catalog.gpu_count(t), t),
    )
    lines = [
        "## GPU instance types",
        "",
        "What `gpuNodeGroup.instanceTypes`, `karpenter.nodePools[].instanceTypes` and `instanceFamilies` (the part",
        "before the dot) accept: the catalog in `components/facts/gpu_catalog.py`.",
        "",
        "| instance type | GPU | GPUs | GPU memory (MiB each) | vCPUs | memory (GiB) |",
        "|---|---|---|---|---|---|",
    ]
    for name in by_size:
        model = gpu_catalog.gpu_model(name)
        gpu = f"{model.name.upper()} slice" if gpu_catalog.is_fractional(name) else model.name.upper()
        lines.append(
            f"| `{name}` | {gpu} | {gpu_catalog.gpu_count(name)} | {gpu_catalog.gpu_memory_mib(name)} "
            f"| {gpu_catalog.vcpus(name)} | {gpu_catalog.memory_mib(name) // 1024} |"
        )
    return lines


def render(project_dir: Path = PROJECT_DIR) -> str:
    """The whole reference as Markdown: the same text for the same models, byte for byte."""
    lines = [INTRO, "## Keys", ""]
    for section in sections(project_dir):
        title = f"`{section.key}`" if section.key else "Top-level keys"
        lines += [f"### {title}", "", *_table(section.rows), ""]
    lines += _instance_types_table()
    return "\n".join(lines) + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
