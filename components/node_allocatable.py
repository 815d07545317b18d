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

from components import gpu_catalog

VM_MEMORY_OVERHEAD_PERCENT: Final = 0.075
EVICTION_HARD_MEMORY_MIB: Final = 100
# kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% of the rest.
_KUBE_RESERVED_CPU_TIERS: Final = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))
# Node DaemonSets on every GPU node (VPC CNI, kube-proxy, Pod Identity agent, the NVIDIA device plugin and
# whatever monitoring lands later) request a few hundred millicores together: a fixed allowance keeps the
# warm-slot math from depending on which add-on versions happen to be installed.
DAEMONSET_ALLOWANCE_CPU_MILLICORES: Final = 500
DAEMONSET_ALLOWANCE_MEMORY_MIB: Final = 512


@dataclass(frozen=True)
class Allocatable:
    cpu_millicores: int
    memory_mib: int


def kube_reserved_cpu_millicores(vcpus: int) -> int:
    millicores = vcpus * 1000
    reserved = 0
    for start, end, share in _KUBE_RESERVED_CPU_TIERS:
        if millicores >= start:
            reserved += int((min(millicores, end) - start) * share)
    return reserved


def kube_reserved_memory_mib(max_pods: int) -> int:
    return 11 * max_pods + 255


def pod_allocatable(instance_type: str, *, max_pods: int) -> Allocatable:
    """CPU and memory left for workload pods on one node of `instance_type` (DaemonSets already placed)."""
    vcpus = gpu_catalog.vcpus(instance_type)
    memory = gpu_catalog.memory_mib(instance_type)
    memory -= math.ceil(memory * VM_MEMORY_OVERHEAD_PERCENT)
    return Allocatable(
        cpu_millicores=vcpus * 1000 - kube_reserved_cpu_millicores(vcpus) - DAEMONSET_ALLOWANCE_CPU_MILLICORES,
        memory_mib=memory
        - kube_reserved_memory_mib(max_pods)
        - EVICTION_HARD_MEMORY_MIB
        - DAEMONSET_ALLOWANCE_MEMORY_MIB,
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
