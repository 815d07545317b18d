"""The `karpenter` chart's values (Karpenter 1.14.1): cluster wiring, HA on the system nodes only, and every
feature gate this program relies on. Pure: no Pulumi import."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from components.facts.constants import (
    HOSTNAME_LABEL,
    KARPENTER_SERVICE_ACCOUNT,
    NODEPOOL_LABEL,
    OS_LABEL,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    ZONE_LABEL,
)
from components.facts.pod_requests import KARPENTER_CONTROLLER_REQUESTS, as_quantities
from components.renderers.karpenter.warm_headroom_manifests import uses_capacity_buffers
from components.settings import KarpenterPool, KarpenterSettings, ObservabilitySettings, ResolvedPool

# Getting-started sizing for the controller; requests = limits gives it Guaranteed QoS.
CONTROLLER_RESOURCES: Final = as_quantities(KARPENTER_CONTROLLER_REQUESTS)


def shares_gpus(karpenter: KarpenterSettings, pools: Sequence[ResolvedPool]) -> bool:
    """True when some Karpenter pool shares GPUs or is g6f, i.e. needs NodeOverlays (and their feature gate).

    `pools`: the resolved Karpenter pools (`StackSettings.resolved.karpenter_pools`): each one's replicas and kind.
    """
    return karpenter.enabled and any(pool.replicas > 1 or pool.slot_kind == "g6f" for pool in pools)


@dataclass(frozen=True)
class ControllerInputs:
    """What the controller's Helm values read: its section, the cluster, and what the GPU pools ask of it."""

    karpenter: KarpenterSettings
    cluster_name: str
    region: str
    observability: ObservabilitySettings
    pools: tuple[KarpenterPool, ...]  # the resolved Karpenter pools (`StackSettings.resolved.karpenter_pools`)


def _feature_gates(inputs: ControllerInputs) -> dict[str, bool]:
    """Every gate this program relies on, stated explicitly (on or off) rather than left to the chart default."""
    return {
        # Simulated nvidia.com/gpu = GPUs x sharing replicas (NodeOverlay, alpha).
        "nodeOverlay": shares_gpus(inputs.karpenter, inputs.pools),
        # Warm GPU slots through CapacityBuffer (alpha), only when some pool keeps them.
        "capacityBuffer": uses_capacity_buffers(inputs.pools),
        # Replace nodes whose health conditions stay bad (AcceleratedHardwareReady=False: 10 minutes), set by
        # the node monitoring agent (aws/karpenter-provider-aws pkg/cloudprovider/cloudprovider.go
        # `RepairPolicies` @ v1.14.1). Never more than 20% of a pool's nodes at once
        # (kubernetes-sigs/karpenter pkg/controllers/node/health/controller.go `allowedUnhealthyPercent`).
        "nodeRepair": inputs.observability.node_repair,
        # Launch into EC2 capacity reservations (BETA, on by default at v1.14.1: charts/karpenter/values.yaml), on only
        # when a pool names some: with it on, Karpenter no longer treats `open` ODCRs as plain on-demand capacity.
        "reservedCapacity": any(pool.capacity_reservations for pool in inputs.karpenter.node_pools),
    }


def helm_values(inputs: ControllerInputs, *, cluster_endpoint: str, interruption_queue: str) -> dict[str, Any]:
    """Values of the `karpenter` chart: cluster wiring, HA on the system nodes only, feature gates."""
    return {
        "replicas": inputs.karpenter.replicas,
        # The Pod Identity association names this service account.
        "serviceAccount": {"name": KARPENTER_SERVICE_ACCOUNT},
        "settings": {
            "clusterName": inputs.cluster_name,
            "clusterEndpoint": cluster_endpoint,
            "interruptionQueue": interruption_queue,  # the queue NAME, not its URL or ARN
            "featureGates": _feature_gates(inputs),
        },
        "controller": {
            # The region from settings, not from IMDS: pods cannot reach IMDS at hop limit 1, and the
            # controller panics when it cannot find its region (aws/karpenter-provider-aws#8219).
            "env": [{"name": "AWS_REGION", "value": inputs.region}],
            "resources": {"requests": dict(CONTROLLER_RESOURCES), "limits": dict(CONTROLLER_RESOURCES)},
        },
        "nodeSelector": {OS_LABEL: "linux", SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE},
        # The chart's defaults, restated so the guarantee does not hang on a default: never run on a node
        # Karpenter launched (it could consolidate its own controller away), one replica per host.
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": NODEPOOL_LABEL, "operator": "DoesNotExist"}]}]
                }
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": HOSTNAME_LABEL}]},
        },
        # One replica per zone: a zone outage leaves a leader-elect-ready standby.
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": "DoNotSchedule"}],
    }
