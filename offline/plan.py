"""The recorded plan of one stack: resources.json, manifests/ and helm.json (docs/offline-synth.md)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.facts.constants import HELM_TYPES
from components.renderers.hub.hub_notebook_pod import notebook_pods
from offline.runner import Recording

# Reading a plan back: libyaml's parser when PyYAML has it (its wheels do), the same documents, ~10x faster.
# Writing stays with the pure-Python emitter: libyaml folds long quoted strings (userData) at other places.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Pulumi-only inputs of Kubernetes resources that are not part of the object the cluster sees.
_NOT_KUBERNETES_FIELDS = ("skipAwait",)
# The weekly cost forecast and its picture (offline/cost.py) sit beside the plan, never under manifests/.
OUTPUT_FILES = ("resources.json", "helm.json", "manifests", "cost-forecast.json", "cost-week.svg")


def _is_kubernetes_object(resource: dict[str, Any]) -> bool:
    return (
        resource["type"].startswith("kubernetes:")
        and resource["type"] not in HELM_TYPES
        and resource["custom"]
        and "kind" in resource["inputs"]
    )


def _manifest_name(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata", {})
    namespace = metadata.get("namespace")
    parts = [obj["kind"].lower(), *([namespace] if namespace else []), metadata.get("name", "unnamed")]
    return "-".join(parts) + ".yaml"


def _ordered(resources: list[dict[str, Any]], program_order: dict[str, int]) -> list[dict[str, Any]]:
    """Registration order: the order the program constructed its resources.

    Kept topological on purpose (parents and dependencies first, ties by program order), which
    program order already is: a resource can only be passed to, or parent, a later one.
    """
    by_urn = {r["urn"]: r for r in resources}
    waits = {
        urn: {d for d in [*r["dependencies"], r["parent"]] if d in by_urn and d != urn} for urn, r in by_urn.items()
    }
    ordered: list[dict[str, Any]] = []
    done: set[str] = set()
    while waits:
        ready = [urn for urn, deps in waits.items() if deps <= done] or list(waits)  # a cycle: keep going
        urn = min(ready, key=lambda u: (program_order.get(u, len(program_order)), u))
        ordered.append(by_urn[urn])
        done.add(urn)
        del waits[urn]
    return ordered


@dataclass
class Plan:
    resources: list[dict[str, Any]]
    manifests: dict[str, dict[str, Any]]
    helm: list[dict[str, Any]]

    # --- building and storing ---------------------------------------------------------------
    @classmethod
    def from_recording(cls, recording: Recording) -> Plan:
        known = {r.urn for r in recording.registrations}
        resources: list[dict[str, Any]] = []
        for r in recording.registrations:
            dependencies = []
            for urn in r.dependencies:
                urn = recording.hidden.get(urn, urn)  # a remote component's child -> the component
                if urn in known and urn != r.urn and urn not in dependencies:
                    dependencies.append(urn)
            resources.append(
                {
                    "urn": r.urn,
                    "type": r.type,
                    "name": r.name,
                    "parent": r.parent,
                    "dependencies": sorted(dependencies),
                    "protect": r.protect,
                    "custom": r.custom,
                    "inputs": r.inputs,
                    # Only where the program gives former URNs (offline.diff matches a resource by them).
                    **({"aliases": r.aliases} if r.aliases else {}),
                }
            )
        resources = _ordered(resources, recording.program_order)
        manifests: dict[str, dict[str, Any]] = {}
        for resource in resources:
            if _is_kubernetes_object(resource):
                obj = {k: v for k, v in resource["inputs"].items() if k not in _NOT_KUBERNETES_FIELDS}
                filename = _manifest_name(obj)
                if filename in manifests:
                    raise ValueError(f"two Kubernetes objects would be written to manifests/{filename}")
                manifests[filename] = obj
        # The notebook Pods the labs' hubs would spawn (one per lab and profile): not created by the program,
        # written so the pods the hub makes are validated like every other object (docs/jupyterhub.md).
        for filename, pod in notebook_pods(recording.settings.labs, recording.settings.resolved).items():
            if filename in manifests:
                raise ValueError(f"two Kubernetes objects would be written to manifests/{filename}")
            manifests[filename] = pod
        helm = [
            {
                "name": r["inputs"].get("name", r["name"]),
                "chart": r["inputs"].get("chart"),
                "version": r["inputs"].get("version"),
                "namespace": r["inputs"].get("namespace"),
                "repository": (r["inputs"].get("repositoryOpts") or {}).get("repo"),
                "skipCrds": bool(r["inputs"].get("skipCrds", False)),
                "values": r["inputs"].get("values", {}),
                "urn": r["urn"],
            }
            for r in resources
            if r["type"] in HELM_TYPES
        ]
        return cls(resources=resources, manifests=dict(sorted(manifests.items())), helm=helm)

    def write(self, out_dir: Path | str) -> None:
        out = Path(out_dir)
        clear_outputs(out)
        (out / "manifests").mkdir(parents=True)
        (out / "resources.json").write_text(_json(self.resources), encoding="utf-8")
        (out / "helm.json").write_text(_json(self.helm), encoding="utf-8")
        for filename, obj in self.manifests.items():
            text = yaml.safe_dump(obj, sort_keys=True, default_flow_style=False, width=1000)
            (out / "manifests" / filename).write_text(text, encoding="utf-8")

    @classmethod
    def load(cls, out_dir: Path | str) -> Plan:
        out = Path(out_dir)
        manifests = {
            p.name: yaml.load(p.read_text(encoding="utf-8"), Loader=_Loader)
            for p in sorted((out / "manifests").glob("*.yaml"))
        }
        return cls(
            resources=json.loads((out / "resources.json").read_text(encoding="utf-8")),
            manifests=manifests,
            helm=json.loads((out / "helm.json").read_text(encoding="utf-8")),
        )

    # --- reading -------------------------------------------------------------------------------
    def of_type(self, type_token: str) -> list[dict[str, Any]]:
        return [r for r in self.resources if r["type"] == type_token]

    def one(self, type_token: str, name: str) -> dict[str, Any]:
        matches = [r for r in self.of_type(type_token) if r["name"] == name]
        if len(matches) != 1:
            raise KeyError(f"{len(matches)} resources of type {type_token} named {name}")
        return matches[0]

    def by_urn(self, urn: str) -> dict[str, Any]:
        return next(r for r in self.resources if r["urn"] == urn)

    def objects(self, kind: str) -> list[dict[str, Any]]:
        return [obj for obj in self.manifests.values() if obj.get("kind") == kind]

    def type_counts(self) -> Counter[str]:
        return Counter(r["type"] for r in self.resources)


def clear_outputs(out_dir: Path) -> None:
    """Remove what an earlier synth wrote, so a failed run never leaves a stale plan behind."""
    for name in OUTPUT_FILES:
        path = out_dir / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
