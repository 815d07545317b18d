"""Learning labs and the GPU admission guard: namespaces, quotas, fences.

Objects are rendered by `components.renderers.labs.lab_manifests` and `components.renderers.labs.gpu_admission_policy`; this
component only creates them. Each lab's namespace also holds the members' Role and RoleBinding
(`components.renderers.labs.lab_rbac`); the members' access entries, which carry the lab's group, are
`components/access.py`'s, with every other principal's: one access entry per principal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.lab_members import LabMembers, LabMembersArgs
from components.renderers.labs import gpu_admission_policy, lab_manifests, lab_rbac
from components.settings import StackSettings

_NAMESPACED_KINDS: dict[str, Any] = {
    "ResourceQuota": k8s.core.v1.ResourceQuota,
    "LimitRange": k8s.core.v1.LimitRange,
    "NetworkPolicy": k8s.networking.v1.NetworkPolicy,
}


@dataclass(frozen=True)
class LabsArgs:
    settings: StackSettings
    k8s_provider: k8s.Provider


class Labs(pulumi.ComponentResource):
    namespaces: dict[str, k8s.core.v1.Namespace]
    # Each lab's quota, LimitRange and NetworkPolicies: a workload in the lab is created after them.
    namespace_objects: dict[str, list[pulumi.CustomResource]]
    # Each lab's members' Role and RoleBinding (a `LabMembers` child: not one of the lab's fences).
    member_rbac: dict[str, list[pulumi.CustomResource]]
    admission_policy: k8s.admissionregistration.v1.ValidatingAdmissionPolicy

    def __init__(self, name: str, args: LabsArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:labs:Labs", name, None, opts)
        settings = args.settings
        child = pulumi.ResourceOptions(parent=self, provider=args.k8s_provider)

        self.admission_policy = self._admission_guard(name, child)
        self.namespaces = {}
        self.namespace_objects = {}
        self.member_rbac = {}
        for lab in settings.labs:
            namespace, *namespaced = lab_manifests.lab_objects(lab, settings.kubernetes_version)
            ns = k8s.core.v1.Namespace(f"{name}-{lab.name}", metadata=namespace["metadata"], opts=child)
            self.namespaces[lab.name] = ns
            in_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[ns]))
            self.namespace_objects[lab.name] = []
            for obj in namespaced:
                resource_class = _NAMESPACED_KINDS[obj["kind"]]
                resource = resource_class(
                    f"{name}-{lab.name}-{obj['metadata']['name']}",
                    metadata=obj["metadata"],
                    spec=obj["spec"],
                    opts=in_namespace,
                )
                self.namespace_objects[lab.name].append(resource)
            members = LabMembers(
                f"{name}-{lab.name}-members",
                LabMembersArgs(lab_rbac.member_rbac(lab), args.k8s_provider, ns),
                pulumi.ResourceOptions(parent=self),
            )
            self.member_rbac[lab.name] = members.created
        self.register_outputs({"labs": list(self.namespaces), "admissionPolicy": self.admission_policy.metadata.name})

    def _admission_guard(
        self, name: str, child: pulumi.ResourceOptions
    ) -> k8s.admissionregistration.v1.ValidatingAdmissionPolicy:
        """Both guard policies, each binding created after its policy; returns the pod policy."""
        created: list[k8s.admissionregistration.v1.ValidatingAdmissionPolicy] = []
        for obj in gpu_admission_policy.admission_objects():
            resource_name = f"{name}-{obj['metadata']['name']}"
            if obj["kind"] == "ValidatingAdmissionPolicy":
                created.append(
                    k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                        resource_name, metadata=obj["metadata"], spec=obj["spec"], opts=child
                    )
                )
            else:
                k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                    resource_name,
                    metadata=obj["metadata"],
                    spec=obj["spec"],
                    opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[created[-1]])),
                )
        return created[0]
