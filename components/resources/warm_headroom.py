"""Registers one pool's warm GPU headroom: its PodTemplate, then the CapacityBuffer that references it.

Objects come from `warm_headroom_manifests`; this helper only registers and orders them. RBAC: none is
added. The controller's ClusterRole in the chart already grants get/list/watch on `capacitybuffers`,
`capacitybuffers/status` and core `podtemplates`, and update/patch on `capacitybuffers/status`
(aws/karpenter-provider-aws v1.14.1 charts/karpenter/templates/clusterrole-core.yaml, bound to the
controller's service account there).
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_kubernetes as k8s

from components.facts import timetable
from components.renderers.karpenter import warm_headroom_manifests
from components.settings import NodePoolSettings, WarmSlotShape


def create_warm_headroom(
    name: str,
    pool: NodePoolSettings,
    *,
    slot_shape: WarmSlotShape,
    sessions: Sequence[timetable.Session],
    parent: pulumi.Resource,
    provider: k8s.Provider,
    depends_on: list[pulumi.Resource],
) -> k8s.apiextensions.CustomResource | None:
    """The pool's PodTemplate and CapacityBuffer (None without warm slots or sessions). `slot_shape`: one warm slot's
    CPU and memory; `sessions`: the lab sessions the pool serves. `depends_on`: the CRDs, the controller (it must be
    running to act on the buffer) and the pool the buffer fills."""
    if not warm_headroom_manifests.keeps_headroom(pool, sessions):
        return None
    template = warm_headroom_manifests.pod_template(pool, slot_shape)
    pod_template = k8s.core.v1.PodTemplate(
        f"{name}-{pool.name}-warm-slot",
        metadata=template["metadata"],
        template=template["template"],
        opts=pulumi.ResourceOptions(parent=parent, provider=provider),
    )
    buffer = warm_headroom_manifests.capacity_buffer(pool)
    return k8s.apiextensions.CustomResource(
        f"{name}-{pool.name}-warm-buffer",
        api_version=buffer["apiVersion"],
        kind=buffer["kind"],
        metadata=buffer["metadata"],
        spec=buffer["spec"],
        # The controller marks a buffer whose template is missing as not ready: create the template first.
        # With a timetable its CronJobs own spec.replicas between sessions' lead times and starts: an `up` then
        # leaves it alone (the next CronJob sets it from the current warmGpuSlots; docs/timetable.md).
        opts=pulumi.ResourceOptions(
            parent=parent,
            provider=provider,
            depends_on=[*depends_on, pod_template],
            ignore_changes=["spec.replicas"] if sessions else None,
        ),
    )
