"""`karpenter`: the controller and its GPU node pools (limits, disruption, warm slots, capacity reservations)."""

from __future__ import annotations

from typing import Annotated, Final, Literal, Self

from pydantic import Field, model_validator

from components.facts import cron, gpu_catalog
from components.settings.fields import (
    BudgetDuration,
    BudgetNodes,
    CpuInstanceType,
    CronSchedule,
    DnsLabel,
    Duration,
    GpuFamily,
    GpuInstanceType,
    GracePeriod,
    SettingsModel,
    matching,
)
from components.settings.gpu import GpuSharingSettings


class DisruptionBudget(SettingsModel):
    nodes: BudgetNodes
    """Nodes Karpenter may disrupt at once (quote a count: "1")."""
    reasons: list[Literal["Underutilized", "Empty", "Drifted"]] | None = None
    """Disruption reasons the budget applies to; unset: all."""
    # Parsed as cron in UTC, as Karpenter does at runtime (components/facts/cron.py).
    schedule: CronSchedule | None = None
    """When each window starts, in UTC; requires duration; unset: always active. Prod's `0 15 * * mon-fri`
    with `11h` covers 08:00-18:00 US Pacific in both PST and PDT."""
    duration: BudgetDuration | None = None
    """How long each window lasts; requires schedule."""

    @model_validator(mode="after")
    def _schedule_with_duration(self) -> Self:
        # The NodePool CRD's CEL rule: has(x.schedule) == has(x.duration).
        if self.schedule is not None and self.duration is None:
            raise ValueError("duration: required with schedule (how long each window lasts, e.g. 10h)")
        if self.duration is not None and self.schedule is None:
            raise ValueError(f"schedule: required with duration (when each window starts: {cron.SCHEDULE_HELP})")
        return self


class WarmSlotShape(SettingsModel):
    """CPU and memory one warm shared-GPU slot reserves: what a typical lab pod requests."""

    cpu_millicores: Annotated[int, Field(ge=10, le=192000)]
    """CPU one warm slot reserves, millicores."""
    memory_mib: Annotated[int, Field(ge=16, le=2097152)]
    """Memory one warm slot reserves, MiB."""


# A lab notebook pod: one core, 4 GiB. Pools whose nodes cannot hold GPUs x replicas of these get less.
TYPICAL_WARM_SLOT = WarmSlotShape(cpu_millicores=1000, memory_mib=4096)
WARM_SLOT_FLOOR = WarmSlotShape(cpu_millicores=100, memory_mib=256)


class CapacityReservationTerm(SettingsModel):
    """One EC2NodeClass capacityReservationSelectorTerm: an On-Demand Capacity Reservation or Capacity Block."""

    id: (
        Annotated[str, matching(r"cr-[0-9a-z]+", "must be a capacity reservation id like cr-0123456789abcdef0")] | None
    ) = None
    """A capacity reservation (or Capacity Block) id, e.g. cr-0123456789abcdef0; exactly one of id and tags."""
    tags: (
        Annotated[
            dict[Annotated[str, Field(min_length=1)], Annotated[str, Field(min_length=1)]],
            Field(min_length=1, max_length=20),
        ]
        | None
    ) = None
    """Tags every selected reservation carries (1-20, '*' matches any value); exactly one of id and tags."""

    @model_validator(mode="after")
    def _one_of(self) -> Self:
        if (self.id is None) == (self.tags is None):
            raise ValueError("set exactly one of id or tags")
        return self


class NodePoolSettings(SettingsModel):
    name: DnsLabel
    """The NodePool's and its EC2NodeClass's name; unique."""
    instance_families: list[GpuFamily] = []
    """GPU families the pool may launch; set this or instanceTypes, not both."""
    instance_types: list[GpuInstanceType] = []
    """GPU instance types the pool may launch; set this or instanceFamilies, not both."""
    allow_mixed_gpu_counts: bool = False
    """true: the pool may mix instance types with different GPU counts (e.g. g4dn.xlarge and g4dn.12xlarge).
    Off by default: one batch of pending pods can then launch the largest type (docs/gpu-health.md
    "No accidental big nodes"); without it, such a pool is an error naming the counts found."""
    capacity_types: Annotated[list[Literal["on-demand", "spot"]], Field(min_length=1)] = ["on-demand"]
    """On-demand and/or spot."""
    architectures: Annotated[list[Literal["amd64"]], Field(min_length=1)] = ["amd64"]
    """CPU architectures (every catalog GPU type is x86_64)."""
    gpu_limit: Annotated[int, Field(ge=1, le=1000)] = 4
    """NodePool limit: physical GPUs."""
    cpu_limit: Annotated[int, Field(ge=1, le=100000)] = 64
    """NodePool limit: vCPUs."""
    expire_after: Duration = "720h"
    """Node lifetime before Karpenter replaces the node."""
    termination_grace_period: GracePeriod = "1h"
    """How long a draining node waits for its pods before they are forced off."""
    # WhenEmpty by default: consolidating an underutilized GPU node evicts running GPU jobs.
    consolidation_policy: Literal["WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"] = "WhenEmpty"
    """When Karpenter consolidates; consolidating an underutilized GPU node evicts GPU jobs."""
    consolidate_after: Duration = "5m"
    """How long a node stays consolidatable before Karpenter acts."""
    disruption_budgets: Annotated[list[DisruptionBudget], Field(min_length=1, max_length=50)] = [
        DisruptionBudget(nodes="1")
    ]
    """How many nodes Karpenter may disrupt at once, and when (schedules in UTC)."""
    weight: Annotated[int, Field(ge=1, le=100)] = 10
    """Priority among pools (higher first)."""
    gpu_sharing: GpuSharingSettings | None = None
    """This pool's GPU sharing (e.g. 4 on A10G, 3 on T4); unset: the stack's gpuSharing."""
    warm_gpu_slots: Annotated[int, Field(ge=0, le=10000)] = 0
    """Shared nvidia.com/gpu slots kept free at all times (a CapacityBuffer); at most gpuLimit x replicas,
    and the nodes holding them within cpuLimit and gpuLimit on some type of the pool; 0: none."""
    warm_slot_shape: WarmSlotShape | None = None
    """CPU and memory one warm slot reserves (needs warmGpuSlots > 0); unset: a typical lab pod (1000m,
    4096 MiB), shrunk until GPUs x replicas slots fit every instance type of the pool."""
    capacity_reservations: Annotated[list[CapacityReservationTerm], Field(max_length=30)] = []
    """EC2 capacity reservations the pool launches into first ([{id} | {tags}], at most 30): the EC2NodeClass's
    capacityReservationSelectorTerms and the `reserved` capacity type in the pool's requirements."""

    @model_validator(mode="after")
    def _one_selector(self) -> Self:
        if bool(self.instance_families) == bool(self.instance_types):
            raise ValueError("set exactly one of instanceFamilies or instanceTypes")
        key = "instanceTypes" if self.instance_types else "instanceFamilies"
        by_count: dict[int, list[str]] = {}
        for instance_type in self.selected_instance_types:
            by_count.setdefault(gpu_catalog.gpu_count(instance_type), []).append(instance_type)
        if len(by_count) > 1 and not self.allow_mixed_gpu_counts:
            found = "; ".join(f"{count} GPU(s): {', '.join(types)}" for count, types in sorted(by_count.items()))
            raise ValueError(
                f"{key}: mixes GPU counts ({found}); a batch of pending pods can then launch the largest type "
                "(Karpenter fills one NodeClaim while any type still fits): list types of one GPU count "
                "(instanceTypes), one pool per GPU count, or set allowMixedGpuCounts: true"
            )
        if len(by_count) == 1 and self.allow_mixed_gpu_counts:
            (count,) = by_count
            raise ValueError(
                f"allowMixedGpuCounts: ignored, every instance type of the pool has {count} GPU(s); remove it"
            )
        return self

    @property
    def selected_instance_types(self) -> tuple[str, ...]:
        if self.instance_types:
            return tuple(sorted(set(self.instance_types)))
        return tuple(sorted({t for f in self.instance_families for t in gpu_catalog.instance_types_of_family(f)}))


# m6i and m7i, large to 2xlarge: small general-purpose nodes, so an empty one is cheap and soon consolidated.
DEFAULT_CPU_USER_TYPES: Final = tuple(
    f"{family}.{size}" for family in ("m6i", "m7i") for size in ("large", "xlarge", "2xlarge")
)


class CpuUserPoolSettings(SettingsModel):
    """The learners' CPU user NodePool: where hub CPU-only notebooks run (created when some lab has a hub)."""

    name: DnsLabel = "cpu-user"
    """The NodePool's and its EC2NodeClass's name; not a GPU pool's name."""
    instance_types: Annotated[list[CpuInstanceType], Field(min_length=1, max_length=50)] = list(DEFAULT_CPU_USER_TYPES)
    """CPU instance types Karpenter may launch for CPU notebooks (the fit model checks a CPU notebook fits one)."""
    capacity_type: Literal["on-demand", "spot"] = "on-demand"
    """on-demand, or spot (cheaper; a reclaimed spot node ends every notebook on it, unsaved work lost)."""
    cpu_limit: Annotated[int, Field(ge=2, le=100000)] = 32
    """NodePool limit: vCPUs of all its nodes together."""
    consolidate_after: Duration = "5m"
    """How long an empty node stays before Karpenter removes it (WhenEmpty: a node with a notebook stays)."""
    expire_after: Duration = "720h"
    """Node lifetime before Karpenter replaces the node."""
    termination_grace_period: GracePeriod = "24h"
    """How long an expiring node waits for its notebooks (do-not-disrupt) before they are forced off."""


class KarpenterSettings(SettingsModel):
    enabled: bool = True
    """Karpenter, its IAM, interruption queue and node pools."""
    replicas: Annotated[int, Field(ge=1, le=5)] = 2
    """Controller replicas (a PDB keeps one up); at most systemNodes.minSize."""
    node_pools: Annotated[list[NodePoolSettings], Field(max_length=100)] = []
    """GPU node pools: a NodePool and EC2NodeClass (and NodeOverlays) each; unique names."""
    cpu_user_pool: CpuUserPoolSettings = CpuUserPoolSettings()
    """The learners' CPU user pool (z2jh's user label and taint), created when some lab has a hub."""

    @model_validator(mode="after")
    def _unique_pool_names(self) -> Self:
        names = [p.name for p in self.node_pools]
        repeat = next((i for i, n in enumerate(names) if n in names[:i]), None)
        if self.cpu_user_pool.name in names:
            raise ValueError(
                f"cpuUserPool.name: '{self.cpu_user_pool.name}' is also nodePools[{names.index(self.cpu_user_pool.name)}]"
                ".name; NodePool names must be unique"
            )
        if repeat is not None:
            raise ValueError(
                f"nodePools[{repeat}].name: names must be unique (repeated: {names[repeat]}, "
                f"first used by nodePools[{names.index(names[repeat])}])"
            )
        return self


# Namespaces the cluster owns: the demo creates its namespace and enforces the `restricted` Pod
# Security Standard on it, which would reject the device plugin's hostPath pods in kube-system.
