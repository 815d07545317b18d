"""Warm shared-GPU headroom as plain dicts: per pool a core/v1 PodTemplate (one warm slot) and the Karpenter
CapacityBuffer (`autoscaling.x-k8s.io/v1beta1`) that keeps `warmGpuSlots` of them free. Pure: no Pulumi import.

How Karpenter consumes them (kubernetes-sigs/karpenter 6e7eab7a0f48, the core pinned by
aws/karpenter-provider-aws v1.14.1 go.mod):
- pkg/controllers/capacitybuffer/controller.go resolves `spec.podTemplateRef` (a PodTemplate in the buffer's
  namespace) and sets `status.replicas` from `spec.replicas` (bounded by `spec.limits` when set; `percentage`
  only applies to `scalableRef`); `provisioningStrategy` defaults to `buffer.x-k8s.io/active-capacity`.
- pkg/state/virtualpods/virtualpods.go builds that many virtual pods from the template (labels, nodeSelector,
  tolerations and requests as written; nodeName and PVC volumes stripped, a fixed low priority), which the
  provisioner schedules with the real pending pods, so free capacity follows demand.
- pkg/controllers/disruption/emptiness.go never treats a node holding buffer pods as empty, so the pools'
  `WhenEmpty` consolidation keeps the warm node.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from components.facts import timetable
from components.facts.constants import (
    GPU_RESOURCE,
    GPU_TOLERATION,
    KARPENTER_NAMESPACE,
    NODEPOOL_LABEL,
    WARM_SLOT_IMAGE,
)
from components.renderers.manifest_helpers import checkov_skip_annotations
from components.settings import KarpenterPool, NodePoolSettings, WarmSlotShape

Manifest = dict[str, Any]

CAPACITY_BUFFER_API_VERSION: Final = "autoscaling.x-k8s.io/v1beta1"
ACTIVE_CAPACITY_STRATEGY: Final = "buffer.x-k8s.io/active-capacity"
HEADROOM_COMPONENT: Final = "warm-gpu-headroom"
# Buffers and their templates are platform objects next to the controller that reads them.
HEADROOM_NAMESPACE: Final = KARPENTER_NAMESPACE
# The template is never run: Karpenter only simulates pods from it, so there is nothing to probe.
POD_TEMPLATE_CHECKOV_SKIPS: Final = {
    "CKV_K8S_8": "never runs: Karpenter only simulates CapacityBuffer pods from this template; nothing to probe",
    "CKV_K8S_9": "never runs and receives no Service traffic (CapacityBuffer virtual pods)",
}


def keeps_headroom(pool: NodePoolSettings, sessions: Sequence[timetable.Session]) -> bool:
    """True when the pool has a CapacityBuffer: warm slots, or lab `sessions` (the pool's) whose timetable raises it
    (from warmGpuSlots, maybe 0)."""
    return pool.warm_gpu_slots > 0 or bool(sessions)


def pools_with_headroom(pools: Sequence[KarpenterPool]) -> tuple[NodePoolSettings, ...]:
    """Pools with a CapacityBuffer (`keeps_headroom`); `pools`: the resolved Karpenter pools (none while off)."""
    return tuple(pool.settings for pool in pools if keeps_headroom(pool.settings, pool.sessions))


def uses_capacity_buffers(pools: Sequence[KarpenterPool]) -> bool:
    """True when some pool keeps warm slots or follows a timetable: the controller's `capacityBuffer` feature gate."""
    return bool(pools_with_headroom(pools))


def headroom_name(pool: NodePoolSettings) -> str:
    return f"{pool.name}-warm-gpu"


def _labels(pool: NodePoolSettings) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": HEADROOM_COMPONENT,
        "app.kubernetes.io/instance": headroom_name(pool),
        "app.kubernetes.io/part-of": "gpu-platform",
    }


def pod_template(pool: NodePoolSettings, shape: WarmSlotShape) -> Manifest:
    """One warm slot: lands only on `pool` (pinned by karpenter.sh/nodepool, tolerates the GPU taint) and
    requests one shared `nvidia.com/gpu` plus the pool's warm slot `shape` (its warmSlotShape, else the capacity model's default)."""
    requests = {"cpu": f"{shape.cpu_millicores}m", "memory": f"{shape.memory_mib}Mi", GPU_RESOURCE: "1"}
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {
            "name": headroom_name(pool),
            "namespace": HEADROOM_NAMESPACE,
            "labels": _labels(pool),
            "annotations": checkov_skip_annotations(POD_TEMPLATE_CHECKOV_SKIPS),
        },
        "template": {
            "metadata": {"labels": _labels(pool)},
            "spec": {
                "nodeSelector": {NODEPOOL_LABEL: pool.name},
                "tolerations": [dict(GPU_TOLERATION)],
                "automountServiceAccountToken": False,
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 65535,
                    "runAsGroup": 65535,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [
                    {
                        "name": "warm-slot",
                        "image": WARM_SLOT_IMAGE,
                        "imagePullPolicy": "IfNotPresent",
                        # Requests = limits: the slot is sized exactly like the pod it keeps room for.
                        "resources": {"requests": dict(requests), "limits": dict(requests)},
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]},
                        },
                    }
                ],
            },
        },
    }


def capacity_buffer(pool: NodePoolSettings) -> Manifest:
    """Keeps `warmGpuSlots` copies of the pool's warm-slot template schedulable at all times."""
    return {
        "apiVersion": CAPACITY_BUFFER_API_VERSION,
        "kind": "CapacityBuffer",
        "metadata": {"name": headroom_name(pool), "namespace": HEADROOM_NAMESPACE, "labels": _labels(pool)},
        "spec": {
            "podTemplateRef": {"name": headroom_name(pool)},
            "replicas": pool.warm_gpu_slots,
            "provisioningStrategy": ACTIVE_CAPACITY_STRATEGY,
        },
    }
