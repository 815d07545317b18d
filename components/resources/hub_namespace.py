"""A lab hub's namespace `<lab>-hub` and what the lab's namespace holds for the hub (renderers/hub/hub_namespace).

The hub's chart waits for all of it: the namespace it installs into, and in the lab's namespace the Role that lets
the hub spawn there, the Secret the notebooks mount, and the policies that let hub, proxy and notebooks talk; in
its own namespace, the default requests its pods had in the lab's.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.renderers.hub import hub_namespace
from components.resources.hub_gpu_idle import create_objects
from components.settings import LabSettings


def create_hub_namespace(
    name: str, lab: LabSettings, kubernetes_version: str, *, provider: k8s.Provider, parent: pulumi.Resource,
    lab_namespace: pulumi.Resource,
) -> list[pulumi.Resource]:  # fmt: skip
    """`<name>-<lab>-hub-namespace` and the lab-side objects; returns everything the hub's chart must wait for."""
    opts = pulumi.ResourceOptions(parent=parent, provider=provider)
    namespace = k8s.core.v1.Namespace(
        f"{name}-{lab.name}-hub-namespace",
        metadata=hub_namespace.namespace_manifest(lab, kubernetes_version)["metadata"],
        opts=opts,
    )
    limit_range = hub_namespace.hub_limit_range(lab)
    defaults = k8s.core.v1.LimitRange(
        f"{name}-{lab.name}-hub-defaults",
        metadata=limit_range["metadata"],
        spec=limit_range["spec"],
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[namespace])),
    )
    in_lab = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[lab_namespace]))
    secret: dict[str, Any] = hub_namespace.singleuser_secret(lab)
    files = k8s.core.v1.Secret(
        f"{name}-{lab.name}-{hub_namespace.NOTEBOOK_FILES_SECRET}",
        metadata=secret["metadata"],
        type=secret["type"],
        string_data=secret["stringData"],
        opts=in_lab,
    )
    lab_side = create_objects(
        f"{name}-hub",
        [*hub_namespace.spawner_rbac(lab), *hub_namespace.lab_side_policies(lab)],
        provider=provider,
        parent=parent,
        depends_on=[lab_namespace],
    )
    return [namespace, defaults, files, *lab_side]
