"""What one GPU node offers pods after system reservations: Karpenter's own allocatable model.

Pure and settings-free (settings validation imports it). The figures follow the AWS provider's
instance-type model at the pinned release, so "fits one node" here means what Karpenter will compute:
aws/karpenter-provider-aws v1.14.1 pkg/providers/instancetype/types.go (kubeReservedResources,
evictionThreshold, the VM memory overhead subtracted from capacity) and charts/karpenter/values.yaml
(`settings.vmMemoryOverheadPercent: 0.075`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from components.facts import gpu_catalog
from components.facts.constants import DCGM_EXPORTER_NAME
from components.facts.constants import NODE_MONITORING_DCGM_SERVER as DCGM_SERVER_NAME

VM_MEMORY_OVERHEAD_PERCENT: Final = 0.075
EVICTION_HARD_MEMORY_MIB: Final = 100
# kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% of the rest.
_KUBE_RESERVED_CPU_TIERS: Final = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))


@dataclass(frozen=True)
class Allocatable:
    cpu_millicores: int
    memory_mib: int

    def __add__(self, other: Allocatable) -> Allocatable:
        return Allocatable(self.cpu_millicores + other.cpu_millicores, self.memory_mib + other.memory_mib)


# --- DaemonSet requests on a GPU node ---------------------------------------------------------------
# Karpenter subtracts the requests of every DaemonSet that will run on a node before it packs pods, so the
# warm-slot math must too. Pod requests are max(init container, sum of containers), as the scheduler counts.
# A request left unset upstream counts 0 (the scheduler reserves nothing for it).
NO_REQUEST: Final = Allocatable(0, 0)
# EKS kube-proxy add-on DaemonSet: `requests: {cpu: 100m, memory: 50Mi}`, as a live EKS cluster's
# kube-proxy v1.31.3-minimal-eksbuild.2 DaemonSet shows in kubernetes-sigs/karpenter#2123 (older builds set
# no memory request; counting it only errs on the safe side).
KUBE_PROXY: Final = Allocatable(100, 50)
# VPC CNI `aws-node`: aws-node 25m plus the network policy agent (enabled here), which falls back to the same
# 25m: aws/eks-charts stable/aws-vpc-cni values.yaml (`resources.requests.cpu: 25m`, `nodeAgent.resources: {}`)
# and templates/daemonset.yaml (`default .Values.resources .Values.nodeAgent.resources`) @ chart 1.22.4.
AWS_NODE: Final = Allocatable(25 + 25, 0)
# eks-pod-identity-agent: `resources: {}` (aws/eks-pod-identity-agent charts/eks-pod-identity-agent/values.yaml
# @ v0.1.37): no requests.
POD_IDENTITY_AGENT: Final = NO_REQUEST
# The platform's own NVIDIA device plugin and MPS control daemon (renderers/device_plugin/device_plugin_manifests.DAEMON_RESOURCES).
DEVICE_PLUGIN_DAEMON: Final = Allocatable(50, 64)
# amazon-cloudwatch-observability (add-on v6.4.0; chart aws-observability/helm-charts
# charts/amazon-cloudwatch-observability/values.yaml @ amazon-cloudwatch-observability-6.4.0, the newest
# tag): `agent.resources.requests` 250m / 128Mi (the `cloudwatch-agent` DaemonSet). Its own dcgm-exporter is
# off (one DCGM engine per node, docs/gpu-health.md); the platform's dcgm-exporter asks for what the chart's
# did (`dcgmExporter.resources.requests` 250m / 128Mi; renderers/observability/dcgm_exporter_manifests.py uses this value).
# Fluent Bit is off (containerLogs), node-exporter needs otelContainerInsights (off), neuron-monitor has
# Neuron-only affinity: none of them runs here.
CLOUDWATCH_AGENT: Final = Allocatable(250, 128)
DCGM_EXPORTER: Final = Allocatable(250, 128)
# eks-node-monitoring-agent v1.6.6 charts/eks-node-monitoring-agent/values.yaml: `nodeAgent.resources.requests`
# 10m / 30Mi; `dcgmAgent.resources: {}` (dcgm-server, NVIDIA nodes only): no requests.
NODE_MONITORING_AGENT: Final = Allocatable(10, 30)
NODE_MONITORING_DCGM_SERVER: Final = NO_REQUEST
# aws-ebs-csi-driver (the EKS add-on the hubs' database volumes need): `node.resources.requests` and
# `controller.resources.requests` 10m / 40Mi, `node.tolerateAllTaints: true` (kubernetes-sigs/aws-ebs-csi-driver
# charts/aws-ebs-csi-driver/values.yaml), and every sidecar without its own resources falls back to them
# (templates/node.yaml: `default .Values.node.resources .Values.sidecars.<name>.resources`): the node pod is the
# plugin, node-driver-registrar and liveness-probe (3 x 10m / 40Mi), on every node, GPU nodes included; the
# controller pod counts the plugin, provisioner, attacher, resizer and liveness-probe the same way (5 x; the
# snapshotter needs the snapshot CRDs, the volume modifier is off).
EBS_CSI_NODE: Final = Allocatable(3 * 10, 3 * 40)
EBS_CSI_CONTROLLER: Final = Allocatable(5 * 10, 5 * 40)


# EKS managed node groups with prefix delegation get maxPods 110 below 30 vCPUs (awslabs/amazon-eks-ami
# templates/al2/runtime/max-pods-calculator.sh, `--cni-prefix-delegation-enabled`); without it fewer. 110 is
# the most, and kube-reserved memory grows with maxPods, so counting 110 never overstates allocatable.
SYSTEM_MAX_PODS: Final = 110
# The CPU user pool's EC2NodeClass sets kubelet maxPods to this (renderers/karpenter/cpu_user_pool_manifests.py).
CPU_USER_MAX_PODS: Final = 110


def gpu_node_daemonsets(
    *, gpu_metrics: bool, node_repair: bool, mps: bool, ebs_csi: bool = False
) -> dict[str, Allocatable]:
    """Requests of each DaemonSet that runs on a GPU node for these settings, by DaemonSet."""
    running = {
        "kube-proxy": KUBE_PROXY,
        "aws-node": AWS_NODE,
        "eks-pod-identity-agent": POD_IDENTITY_AGENT,
        "nvidia-device-plugin": DEVICE_PLUGIN_DAEMON,
    }
    if mps:
        running["nvidia-mps-control-daemon"] = DEVICE_PLUGIN_DAEMON
    if gpu_metrics:
        running |= {"cloudwatch-agent": CLOUDWATCH_AGENT, DCGM_EXPORTER_NAME: DCGM_EXPORTER}
    if node_repair:
        running |= {"eks-node-monitoring-agent": NODE_MONITORING_AGENT, DCGM_SERVER_NAME: NODE_MONITORING_DCGM_SERVER}
    if ebs_csi:
        running["ebs-csi-node"] = EBS_CSI_NODE
    return running


def daemonset_requests(*, gpu_metrics: bool, node_repair: bool, mps: bool, ebs_csi: bool = False) -> Allocatable:
    """Sum of the DaemonSet requests on one GPU node (what Karpenter reserves for them)."""
    running = gpu_node_daemonsets(gpu_metrics=gpu_metrics, node_repair=node_repair, mps=mps, ebs_csi=ebs_csi)
    return sum(running.values(), NO_REQUEST)


def kube_reserved_cpu_millicores(vcpus: int) -> int:
    millicores = vcpus * 1000
    reserved = 0
    for start, end, share in _KUBE_RESERVED_CPU_TIERS:
        if millicores >= start:
            reserved += int((min(millicores, end) - start) * share)
    return reserved


def kube_reserved_memory_mib(max_pods: int) -> int:
    return 11 * max_pods + 255


def pod_allocatable(instance_type: str, *, max_pods: int, daemonsets: Allocatable) -> Allocatable:
    """CPU and memory left for workload pods on one node of `instance_type` after `daemonsets` are placed."""
    vcpus = gpu_catalog.vcpus(instance_type)
    memory = gpu_catalog.memory_mib(instance_type)
    memory -= math.ceil(memory * VM_MEMORY_OVERHEAD_PERCENT)
    return Allocatable(
        cpu_millicores=vcpus * 1000 - kube_reserved_cpu_millicores(vcpus) - daemonsets.cpu_millicores,
        memory_mib=memory - kube_reserved_memory_mib(max_pods) - EVICTION_HARD_MEMORY_MIB - daemonsets.memory_mib,
    )


# nodeadm v20260724 turns the SOCI parallel pull on only at >= 4 vCPUs and >= 7 GiB (the kernel-visible
# memory of an xlarge); below that the gate is ignored: awslabs/amazon-eks-ami v20260724
# nodeadm/internal/containerd/config.go (UseSOCISnapshotter).
FAST_IMAGE_PULL_MIN_VCPUS: Final = 4
FAST_IMAGE_PULL_MIN_MEMORY_MIB: Final = 7 * 1024


def meets_fast_image_pull_minimum(vcpus: int, memory_mib: int) -> bool:
    return vcpus >= FAST_IMAGE_PULL_MIN_VCPUS and memory_mib >= FAST_IMAGE_PULL_MIN_MEMORY_MIB


def instance_meets_fast_image_pull_minimum(instance_type: str) -> bool:
    return meets_fast_image_pull_minimum(gpu_catalog.vcpus(instance_type), gpu_catalog.memory_mib(instance_type))
