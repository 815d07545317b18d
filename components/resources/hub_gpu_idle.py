"""The GPU idle reaper's Kubernetes objects (renderers/hub_gpu_idle.reaper_objects) as typed resources.

Two owners call it: the lab's hub for the objects in the hub's namespace (after the namespace), and the
observability component for the Role in the add-on's namespace (after the add-on creates it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

_KINDS: dict[str, Any] = {
    "Role": k8s.rbac.v1.Role,
    "RoleBinding": k8s.rbac.v1.RoleBinding,
    "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
}
_FIELDS = {"metadata": "metadata", "rules": "rules", "roleRef": "role_ref", "subjects": "subjects", "spec": "spec"}


def create_objects(
    name: str,
    objects: Sequence[dict[str, Any]],
    *,
    provider: k8s.Provider,
    parent: pulumi.Resource,
    depends_on: Sequence[pulumi.Resource],
) -> list[pulumi.CustomResource]:
    """One typed resource per object, named `<name>-<namespace>-<kind>-<object name>`."""
    created = []
    for obj in objects:
        metadata = obj["metadata"]
        fields = {_FIELDS[key]: value for key, value in obj.items() if key in _FIELDS}
        created.append(
            _KINDS[obj["kind"]](
                f"{name}-{metadata['namespace']}-{obj['kind'].lower()}-{metadata['name']}",
                **fields,
                opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=list(depends_on)),
            )
        )
    return created
