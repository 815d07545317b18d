"""What one lab's members may do in its namespace: the Role and RoleBinding `lab-member`.

Rendered by `components.renderers.labs.lab_rbac`; this component only creates them, as a child of the labs
component (they are not among the lab's fences, which the hub and the demo wait for). The members' access
entries, which carry the lab's group, are `components/access.py`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

# Kinds without a `spec`: every top-level field but apiVersion/kind is an argument of the resource.
_RBAC_KINDS: dict[str, Any] = {
    "Role": k8s.rbac.v1.Role,
    "RoleBinding": k8s.rbac.v1.RoleBinding,
}


@dataclass(frozen=True)
class LabMembersArgs:
    objects: list[dict[str, Any]]  # lab_rbac.member_rbac(lab): the Role, then its RoleBinding
    k8s_provider: k8s.Provider
    namespace: k8s.core.v1.Namespace


class LabMembers(pulumi.ComponentResource):
    """The Role, then its binding, created after the Role (and both after the namespace)."""

    created: list[pulumi.CustomResource]

    def __init__(self, name: str, args: LabMembersArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:labs:LabMembers", name, None, opts)
        self.created = []
        for obj in args.objects:
            fields = {key: value for key, value in obj.items() if key not in ("apiVersion", "kind")}
            after = [args.namespace, *self.created[-1:]]
            suffix = "" if obj["kind"] == "Role" else "-binding"
            self.created.append(
                _RBAC_KINDS[obj["kind"]](
                    f"{name.removesuffix('-members')}-{obj['metadata']['name']}{suffix}",
                    **{_snake(key): value for key, value in fields.items()},
                    opts=pulumi.ResourceOptions(parent=self, provider=args.k8s_provider, depends_on=after),
                )
            )
        self.register_outputs({"objects": [obj["metadata"]["name"] for obj in args.objects]})


def _snake(key: str) -> str:
    """`roleRef` -> `role_ref`: the Python SDK's argument names."""
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)
