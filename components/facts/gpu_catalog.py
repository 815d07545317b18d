"""NVIDIA GPU instance types (and the CPU-only types of the system and CPU user nodes) this platform knows: the one
table of instance facts.

Physical GPUs, GPU model, vCPUs, memory and VPC CNI pod limits per instance type are written here and
nowhere else (tests/facts/test_instance_facts.py fails on a second table): settings reject non-GPU types with
it, and the capacity math (GPUs x sharing replicas), warm headroom, node allocatable and the EC2 vCPU
quota all read it. Source: the EC2 accelerated-computing instance type pages.
"""

from __future__ import annotations

from typing import Final, NamedTuple


class GpuModel(NamedTuple):
    name: str  # karpenter.k8s.aws/instance-gpu-name
    memory_mib: int  # per GPU


T4: Final = GpuModel("t4", 16384)
A10G: Final = GpuModel("a10g", 24576)
L4: Final = GpuModel("l4", 23034)
L40S: Final = GpuModel("l40s", 46068)
A100: Final = GpuModel("a100", 40960)
H100: Final = GpuModel("h100", 81920)

# g6f: a fractional L4 (NVIDIA vGPU), one hardware partition with its own framebuffer per instance. EC2 reports
# `instance-gpu-count: "0"` for it, so the device plugin's one vGPU device is the only GPU a node has
# (aws/karpenter-provider-aws v1.14.1 website/content/en/docs/reference/instance-types.md, "g6f Family";
# website/content/en/docs/concepts/nodeoverlays.md "Example: Fractional GPU Instances (g6f)", PR #9395).
FRACTIONAL_GPU_FAMILIES: Final = ("g6f",)
# Framebuffer of one g6f instance's slice, MiB (`karpenter.k8s.aws/instance-gpu-memory`, same page).
_FRACTIONAL_FRAMEBUFFER_MIB: Final = {"g6f.large": 2861, "g6f.xlarge": 2861, "g6f.2xlarge": 5722, "g6f.4xlarge": 11444}

# family -> (model, {size: (physical GPUs, pods the VPC CNI can address without prefix delegation)})
# ENI pod limits follow amazon-eks-ami eni-max-pods.txt (ENIs x (IPv4 per ENI - 1) + 2).
_FAMILIES: Final[dict[str, tuple[GpuModel, dict[str, tuple[int, int]]]]] = {
    "g4dn": (T4, {
        "xlarge": (1, 29), "2xlarge": (1, 29), "4xlarge": (1, 29), "8xlarge": (1, 58),
        "16xlarge": (1, 58), "12xlarge": (4, 234), "metal": (8, 737),
    }),
    "g5": (A10G, {
        "xlarge": (1, 58), "2xlarge": (1, 58), "4xlarge": (1, 234), "8xlarge": (1, 234),
        "16xlarge": (1, 234), "12xlarge": (4, 737), "24xlarge": (4, 737), "48xlarge": (8, 345),
    }),
    "g6": (L4, {
        "xlarge": (1, 58), "2xlarge": (1, 58), "4xlarge": (1, 234), "8xlarge": (1, 234),
        "16xlarge": (1, 737), "12xlarge": (4, 234), "24xlarge": (4, 737), "48xlarge": (8, 737),
    }),
    "g6e": (L40S, {
        "xlarge": (1, 58), "2xlarge": (1, 58), "4xlarge": (1, 234), "8xlarge": (1, 234),
        "16xlarge": (1, 737), "12xlarge": (4, 737), "24xlarge": (4, 737), "48xlarge": (8, 737),
    }),
    # One vGPU slice per instance: the 1 is the device the plugin advertises, not EC2's reported count (0).
    # Pods: Karpenter's ENI-limited pod count on the same instance-types page.
    "g6f": (L4, {"large": (1, 20), "xlarge": (1, 58), "2xlarge": (1, 58), "4xlarge": (1, 234)}),
    "p4d": (A100, {"24xlarge": (8, 737)}),
    "p5": (H100, {"48xlarge": (8, 100)}),
}  # fmt: skip

GPU_FAMILIES: Final = tuple(sorted(_FAMILIES))
GPU_INSTANCE_TYPES: Final = tuple(
    sorted(f"{family}.{size}" for family, (_, sizes) in _FAMILIES.items() for size in sizes)
)


def family_of(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def gpu_count(instance_type: str) -> int:
    """Physical GPUs of one instance type; KeyError for a type this catalog does not know."""
    family, _, size = instance_type.partition(".")
    return _FAMILIES[family][1][size][0]


def eni_max_pods(instance_type: str) -> int:
    """Pods the VPC CNI can address on this type without prefix delegation."""
    family, _, size = instance_type.partition(".")
    return _FAMILIES[family][1][size][1]


def gpu_model(instance_type_or_family: str) -> GpuModel:
    return _FAMILIES[family_of(instance_type_or_family)][0]


def is_fractional(instance_type_or_family: str) -> bool:
    """A g6f type: one hardware slice of a GPU, reported by EC2 (and Karpenter's label) as 0 GPUs."""
    return family_of(instance_type_or_family) in FRACTIONAL_GPU_FAMILIES


def reported_gpu_count(instance_type: str) -> int:
    """`karpenter.k8s.aws/instance-gpu-count` as Karpenter labels the type: 0 for fractional types."""
    return 0 if is_fractional(instance_type) else gpu_count(instance_type)


def gpu_memory_mib(instance_type: str) -> int:
    """GPU memory of one GPU device of this type: the slice's framebuffer on g6f, else the whole GPU's."""
    if is_fractional(instance_type):
        return _FRACTIONAL_FRAMEBUFFER_MIB[instance_type]
    return gpu_model(instance_type).memory_mib


def instance_types_of_family(family: str) -> tuple[str, ...]:
    return tuple(sorted(f"{family}.{size}" for size in _FAMILIES[family][1]))


# vCPUs and memory (GiB) per instance type, from the same EC2 accelerated-computing pages (g6f: Karpenter's
# instance-types page above, `instance-cpu` and `instance-memory`). They size the
# warm-headroom slot shape (what one node can hold after system reservations) and gate FastImagePull.
_VCPUS_MEMORY_GIB: Final[dict[str, tuple[int, int]]] = {
    "g4dn.xlarge": (4, 16), "g4dn.2xlarge": (8, 32), "g4dn.4xlarge": (16, 64), "g4dn.8xlarge": (32, 128),
    "g4dn.12xlarge": (48, 192), "g4dn.16xlarge": (64, 256), "g4dn.metal": (96, 384),
    "g5.xlarge": (4, 16), "g5.2xlarge": (8, 32), "g5.4xlarge": (16, 64), "g5.8xlarge": (32, 128),
    "g5.12xlarge": (48, 192), "g5.16xlarge": (64, 256), "g5.24xlarge": (96, 384), "g5.48xlarge": (192, 768),
    "g6.xlarge": (4, 16), "g6.2xlarge": (8, 32), "g6.4xlarge": (16, 64), "g6.8xlarge": (32, 128),
    "g6.12xlarge": (48, 192), "g6.16xlarge": (64, 256), "g6.24xlarge": (96, 384), "g6.48xlarge": (192, 768),
    "g6e.xlarge": (4, 32), "g6e.2xlarge": (8, 64), "g6e.4xlarge": (16, 128), "g6e.8xlarge": (32, 256),
    "g6e.12xlarge": (48, 384), "g6e.16xlarge": (64, 512), "g6e.24xlarge": (96, 768), "g6e.48xlarge": (192, 1536),
    "g6f.large": (2, 8), "g6f.xlarge": (4, 16), "g6f.2xlarge": (8, 32), "g6f.4xlarge": (16, 64),
    "p4d.24xlarge": (96, 1152),
    "p5.48xlarge": (192, 2048),
}  # fmt: skip


# CPU-only types the system node group and the learners' CPU user pool may use (the fit model sizes their nodes):
# family -> GiB of memory per vCPU, and the sizes known, from the EC2 general purpose / compute / memory optimized
# instance type pages (every size of these families has exactly that ratio: m 4, c 2, r 8 GiB per vCPU).
_CPU_FAMILIES: Final[dict[str, int]] = {
    "m5": 4, "m6i": 4, "m6a": 4, "m7i": 4, "m7a": 4, "c6i": 2, "c7i": 2, "r6i": 8, "r7i": 8,
}  # fmt: skip
_CPU_SIZES: Final = {"large": 2, "xlarge": 4, "2xlarge": 8, "4xlarge": 16, "8xlarge": 32}
_CPU_VCPUS_MEMORY_GIB: Final = {
    f"{family}.{size}": (size_vcpus, size_vcpus * gib_per_vcpu)
    for family, gib_per_vcpu in _CPU_FAMILIES.items()
    for size, size_vcpus in _CPU_SIZES.items()
}
CPU_FAMILIES: Final = tuple(sorted(_CPU_FAMILIES))
CPU_INSTANCE_TYPES: Final = tuple(sorted(_CPU_VCPUS_MEMORY_GIB))


def _shape(instance_type: str) -> tuple[int, int]:
    return _VCPUS_MEMORY_GIB.get(instance_type) or _CPU_VCPUS_MEMORY_GIB[instance_type]


def vcpus(instance_type: str) -> int:
    """vCPUs of a GPU or CPU-only type of this catalog; KeyError for one it does not know."""
    return _shape(instance_type)[0]


def memory_mib(instance_type: str) -> int:
    """Instance memory as EC2 lists it (the kernel sees a little less: see node_allocatable)."""
    return _shape(instance_type)[1] * 1024


# EC2 counts GPU instances against per-family vCPU quotas (Service Quotas, service code `ec2`): on-demand and spot
# apart, G (and VT) apart from P. (capacity type, instance family class) -> (quota code, quota name).
VCPU_QUOTAS: Final = {
    ("on-demand", "g"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("on-demand", "p"): ("L-417A185B", "Running On-Demand P instances"),
    ("spot", "g"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("spot", "p"): ("L-7212CCBC", "All P Spot Instance Requests"),
}


def family_class(instance_type: str) -> str:
    """The instance family class a vCPU quota counts: `g` or `p`."""
    return family_of(instance_type)[0]
