"""Which DaemonSets run a DCGM host engine on each kind of GPU node, read from the rendered configuration.

Pure: the observability, managed GPU group and Karpenter sections in, rows out. NVIDIA's profiling fields
are exclusive per GPU, so two host engines on one node fight over them (aws/eks-node-monitoring-agent#256),
and the node monitoring agent can then report `AcceleratedHardwareReady=False` on a healthy node
(aws/containers-roadmap#2763). The platform keeps exactly one engine per GPU node; this module derives, from
the add-on configuration values and the DaemonSet the stack renders, what runs one, so the synth summary and
the tests read the same answer:

- `dcgm-server` (eks-node-monitoring-agent): runs `nv-hostengine -n -b ALL` whenever the add-on is installed;
  chart v1.6.6 has no switch for it (charts/configuration.schema.json `DCGMAgent`: affinity, tolerations,
  resources, labels only). It lands on a GPU node when its tolerations (ours; the chart's default is `[]`)
  tolerate the GPU taint and the node's instance type is in its affinity list (values.yaml `dcgmAgent.affinity`).
- `dcgm-exporter` (amazon-cloudwatch-observability): runs an embedded engine when `dcgmExporter.enabled`
  (chart default true @ amazon-cloudwatch-observability-6.4.0) and its tolerations (root `tolerations`,
  or `dcgmExporter.tolerations`) tolerate the GPU taint.
- the platform's dcgm-exporter: runs an embedded engine unless its args name a remote host engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.facts.constants import (
    CLOUDWATCH_OBSERVABILITY_ADDON,
    GPU_TAINT,
    NODE_MONITORING_AGENT_ADDON,
    NODE_MONITORING_DCGM_SERVER,
)
from components.facts.node_monitoring import CLOUDWATCH_DCGM_EXPORTER, NODE_MONITORING_DCGM_INSTANCE_TYPES
from components.renderers.device_plugin.gpu_capacity import MANAGED_GROUP_POOL
from components.renderers.observability import dcgm_exporter_manifests as exporter
from components.renderers.observability import observability_config as addons
from components.settings import GpuNodeGroupSettings, KarpenterSettings, ObservabilitySettings


def _tolerates(toleration: dict[str, Any], taint: dict[str, str]) -> bool:
    """core/v1 Toleration.ToleratesTaint: effect, key (empty key + Exists matches all), then operator/value."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    if toleration.get("operator", "Equal") == "Exists":
        return True
    return bool(toleration.get("key")) and toleration.get("value", "") == taint["value"]


def _lands_on_gpu_nodes(tolerations: list[dict[str, Any]]) -> bool:
    return any(_tolerates(t, GPU_TAINT) for t in tolerations)


@dataclass(frozen=True)
class EngineRow:
    """One kind of GPU node and the DaemonSets on it that run a DCGM host engine (and those that use one)."""

    pool: str
    instance_types: tuple[str, ...]
    engines: tuple[str, ...]  # "<DaemonSet> (<add-on or owner>)"
    clients: tuple[str, ...]  # DaemonSets connecting to an engine they do not run


def engines_on(observability: ObservabilitySettings, instance_types: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(DaemonSets running a host engine, DaemonSets using a remote one) on GPU nodes of these types."""
    engines: list[str] = []
    clients: list[str] = []
    if observability.node_repair:
        values = addons.node_monitoring_agent_configuration()
        dcgm_agent = values.get("dcgmAgent", {})
        if _lands_on_gpu_nodes(dcgm_agent.get("tolerations", [])) and all(
            t in NODE_MONITORING_DCGM_INSTANCE_TYPES for t in instance_types
        ):
            engines.append(f"{NODE_MONITORING_DCGM_SERVER} ({NODE_MONITORING_AGENT_ADDON})")
            clients.append(f"eks-node-monitoring-agent ({NODE_MONITORING_AGENT_ADDON}, localhost:5555)")
    if observability.gpu_metrics:
        values = addons.cloudwatch_observability_configuration()
        dcgm = values.get("dcgmExporter", {})
        tolerations = dcgm.get("tolerations", values.get("tolerations", []))
        if dcgm.get("enabled", True) and _lands_on_gpu_nodes(tolerations):
            engines.append(f"{CLOUDWATCH_DCGM_EXPORTER} ({CLOUDWATCH_OBSERVABILITY_ADDON})")
        daemon_set = exporter.daemon_set(observability)
        pod = daemon_set["spec"]["template"]["spec"]
        if _lands_on_gpu_nodes(pod["tolerations"]):
            name = daemon_set["metadata"]["name"]
            args = [arg for container in pod["containers"] for arg in container.get("args", [])]
            remote = [a.split("=", 1)[1] for a in args if a.startswith(exporter.REMOTE_HOSTENGINE_FLAG + "=")]
            if remote:
                clients.append(f"{name} (platform, {remote[0]})")
            else:
                engines.append(f"{name} (platform, embedded)")
    return engines, clients


def engine_rows(
    observability: ObservabilitySettings, gpu_node_group: GpuNodeGroupSettings, karpenter: KarpenterSettings
) -> list[EngineRow]:
    """Per kind of GPU node the stack can launch (managed group, each Karpenter pool): its DCGM engines."""
    kinds: list[tuple[str, tuple[str, ...]]] = []
    if gpu_node_group.enabled:
        kinds.append((MANAGED_GROUP_POOL, tuple(sorted(gpu_node_group.instance_types))))
    if karpenter.enabled:
        kinds += [(pool.name, pool.selected_instance_types) for pool in karpenter.node_pools]
    rows = []
    for pool, instance_types in kinds:
        engines, clients = engines_on(observability, instance_types)
        rows.append(EngineRow(pool, instance_types, tuple(engines), tuple(clients)))
    return rows
