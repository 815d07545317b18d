"""Where the learning-lab demo pods run, and why `pulumi up` does not wait for them (pure renderer).

Two rules keep the demo from holding `up` or buying GPUs twice:
- `pulumi.com/skipAwait`: pulumi-kubernetes otherwise waits (10 minutes by default) for every replica
  to become Available, i.e. for a GPU node to boot and a multi-GB image to pull. Chosen over a longer
  custom timeout: any timeout still holds `up` for the boot + pull minutes, and turns a capacity
  problem the demo cannot fix (no quota, no g4dn in the zone) into a failed `up` of the whole platform.
- With the managed GPU group enabled the pods go to its node(s): required affinity when the group's
  desired nodes have the slots for every replica (Karpenter cannot provide the node-group label, so it
  never launches a node for them), preferred affinity when they do not (Karpenter adds the rest).
"""

from __future__ import annotations

from typing import Any

from components import gpu_catalog
from components.constants import EKS_NODE_GROUP_LABEL_KEY, managed_gpu_node_group_name
from components.renderers.gpu_capacity import schedulable_gpus
from components.settings import StackSettings

# pulumi-kubernetes skips its readiness await for objects carrying this annotation: the Deployment
# is created and `up` moves on (pulumi/pulumi-kubernetes provider/pkg/metadata/overrides.go
# ReadyCondition -> SkipAwaitLogic, called by provider/pkg/await/await.go Creation; deployment.go
# DefaultDeploymentTimeoutMins = 10; read at v4.32.0, the newest tag in the snapshot, for 4.34.2).
SKIP_AWAIT_ANNOTATION = {"pulumi.com/skipAwait": "true"}


def managed_group_slots(settings: StackSettings) -> int:
    """Shared GPU slots the managed group's desired nodes offer (its smallest instance type), 0 if disabled."""
    group = settings.gpu_node_group
    if not group.enabled:
        return 0
    per_node = min(schedulable_gpus(gpu_catalog.gpu_count(t), settings.gpu_sharing) for t in group.instance_types)
    return per_node * group.desired_size


def demo_affinity(settings: StackSettings) -> dict[str, Any] | None:
    """Node affinity of the demo pods: pinned to, or preferring, the managed GPU group; None without it."""
    if not settings.gpu_node_group.enabled:
        return None
    term = {
        "matchExpressions": [
            {
                "key": EKS_NODE_GROUP_LABEL_KEY,
                "operator": "In",
                "values": [managed_gpu_node_group_name(settings.cluster_name)],
            }
        ]
    }
    if settings.demo.replicas <= managed_group_slots(settings):
        return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": term}]}}


def place_demo_deployment(deployment: dict[str, Any], settings: StackSettings) -> dict[str, Any]:
    """The rendered demo Deployment with the skip-await annotation and its node affinity."""
    metadata = {
        **deployment["metadata"],
        "annotations": {**deployment["metadata"].get("annotations", {}), **SKIP_AWAIT_ANNOTATION},
    }
    pod_spec = dict(deployment["spec"]["template"]["spec"])
    affinity = demo_affinity(settings)
    if affinity is not None:
        pod_spec["affinity"] = affinity
    template = {**deployment["spec"]["template"], "spec": pod_spec}
    return {**deployment, "metadata": metadata, "spec": {**deployment["spec"], "template": template}}
