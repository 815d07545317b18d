"""EC2 vCPU quotas a stack can use at its GPU limits, so a fresh account is sized before the first `up`.

EC2 counts GPU instances against per-family vCPU quotas (Service Quotas, service code `ec2`). Per pool:
- a Karpenter pool uses at most min(cpuLimit, gpuLimit x the highest vCPUs-per-GPU of its instance
  types): both limits bound the pool, and the GPU limit is reached soonest on the type with the most
  vCPUs per GPU (Karpenter checks limits before each launch, so it may overshoot by one node);
- the managed GPU group uses at most maxSize x the vCPUs of its largest instance type.
Pools allowing on-demand count against the On-Demand quota, pools allowing spot against the Spot one.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.facts import gpu_catalog
from components.settings import GpuNodeGroupSettings, ResolvedStack  # vCPUs per pool: the resolved model

# (capacity type, instance family class) -> (quota code, quota name) in Service Quotas.
QUOTAS = {
    ("on-demand", "g"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("on-demand", "p"): ("L-417A185B", "Running On-Demand P instances"),
    ("spot", "g"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("spot", "p"): ("L-7212CCBC", "All P Spot Instance Requests"),
}


def _family_class(instance_type: str) -> str:
    return gpu_catalog.family_of(instance_type)[0]


@dataclass(frozen=True)
class QuotaNeed:
    code: str
    name: str
    vcpus: int


def quota_needs(group: GpuNodeGroupSettings, resolved: ResolvedStack) -> list[QuotaNeed]:
    """vCPUs each EC2 quota must allow for every GPU pool of the stack (`StackSettings.resolved`) to reach its limit;
    sorted by code. `group`: the managed group's section (its capacity type)."""
    totals: dict[tuple[str, str], int] = {}

    def add(capacity: str, types: tuple[str, ...], bound: int) -> None:
        for family_class in sorted({_family_class(t) for t in types}):
            key = (capacity, family_class)
            totals[key] = totals.get(key, 0) + bound

    if resolved.managed_group is not None:
        purchase = "spot" if group.capacity_type == "SPOT" else "on-demand"
        add(purchase, tuple(group.instance_types), resolved.managed_group.quota_vcpus)
    for pool in resolved.karpenter_pools:
        for purchase in sorted(set(pool.settings.capacity_types)):
            add(purchase, pool.settings.selected_instance_types, pool.quota_vcpus)
    needs = [QuotaNeed(*QUOTAS[key], vcpus=total) for key, total in totals.items()]
    return sorted(needs, key=lambda need: need.code)
