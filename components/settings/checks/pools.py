"""What each GPU pool must hold: a sharing kind its instance types allow, its warm slots and its sessions' peaks
within its limits on some instance type, and a termination grace long enough that expiry never ends a session."""

from __future__ import annotations

from collections.abc import Sequence

from components.facts import gpu_catalog, timetable
from components.settings.gpu import GpuSharingSettings
from components.settings.karpenter import WARM_SLOT_FLOOR
from components.settings.resolved import MPS_MIN_CLIENT_MIB, KarpenterPool, mps_client_cap_mib, session_pool
from components.settings.stack import StackSettings


def sharing_fits_instance_types(settings: StackSettings) -> None:
    """g6f slices only whole (strategy none) and never mixed with whole GPUs; MPS caps of at least 1 GiB."""
    if settings.gpu_node_group.enabled:
        group = settings.gpu_node_group.instance_types
        _check_sharing(settings.gpu_sharing, group, "gpuNodeGroup.instanceTypes", "gpuSharing")
    for pool in settings.resolved.karpenter_pools:
        types_key = f"{pool.key}.{'instanceTypes' if pool.settings.instance_types else 'instanceFamilies'}"
        sharing_key = f"{pool.key}.gpuSharing" if pool.settings.gpu_sharing else "gpuSharing"
        _check_sharing(pool.sharing, pool.settings.selected_instance_types, types_key, sharing_key)


def _check_sharing(
    sharing: GpuSharingSettings, instance_types: Sequence[str], types_key: str, sharing_key: str
) -> None:
    fractional = [t for t in instance_types if gpu_catalog.is_fractional(t)]
    if fractional and len(fractional) != len(instance_types):
        whole = ", ".join(t for t in instance_types if not gpu_catalog.is_fractional(t))
        raise ValueError(
            f"{types_key}: g6f slices ({', '.join(fractional)}) and whole GPUs ({whole}) in one pool; a pool is one "
            "sharing kind, so put the g6f types in a pool of their own"
        )
    if fractional and sharing.strategy != "none":
        raise ValueError(
            f"{sharing_key}.strategy: '{sharing.strategy}' on g6f ({', '.join(fractional)}); a g6f instance is already "
            "one hardware slice of an L4 with its own framebuffer, shared by no one: allowed is 'none'"
        )
    if sharing.strategy == "mps":
        smallest = min(instance_types, key=gpu_catalog.gpu_memory_mib)
        memory = gpu_catalog.gpu_memory_mib(smallest)
        cap = mps_client_cap_mib(memory, sharing.replicas)
        if cap < MPS_MIN_CLIENT_MIB:
            raise ValueError(
                f"{sharing_key}.replicas: {sharing.replicas} MPS clients on {smallest} ({memory} MiB) cap each at "
                f"{cap} MiB, below {MPS_MIN_CLIENT_MIB} MiB; allowed: at most {memory // MPS_MIN_CLIENT_MIB} replicas"
            )


def warm_headroom_fits(settings: StackSettings) -> None:
    """Every pool's warm slots fit its limits and its nodes."""
    for pool in settings.resolved.karpenter_pools:
        if pool.settings.warm_gpu_slots > 0:
            _check_warm_headroom(pool)


def timetable_fits(settings: StackSettings) -> None:
    """Every session names a pool it can warm, and every pool with sessions holds them."""
    pools = settings.karpenter.node_pools if settings.karpenter.enabled else []
    names = ", ".join(pool.name for pool in pools)
    for i, lab in enumerate(settings.labs):
        for j, session in enumerate(lab.sessions):
            if session_pool(settings.karpenter, session) is not None:
                continue
            key = f"labs.{i}.sessions.{j}"
            if not pools:
                raise ValueError(f"{key}: a session needs a Karpenter pool to warm (karpenter.nodePools)")
            if session.node_pool is None:
                raise ValueError(f"{key}.nodePool: required with several pools (one of {names})")
            raise ValueError(f"{key}.nodePool: '{session.node_pool}' is not a karpenter.nodePools name ({names})")
    for resolved in settings.resolved.timetabled:
        _check_timetable(resolved)


def _check_warm_headroom(held: KarpenterPool) -> None:
    """Warm slots fit the pool's limits and one node holds all its slots of the slot shape (ValueError if not)."""
    pool, key = held.settings, held.key
    slots = pool.warm_gpu_slots
    if slots > held.slot_limit:
        raise ValueError(
            f"{key}.warmGpuSlots: {slots} exceeds the pool's nvidia.com/gpu limit, gpuLimit x replicas = "
            f"{pool.gpu_limit} x {held.replicas} = {held.slot_limit}"
        )
    shape = held.warm_slot_shape
    too_small = shape.cpu_millicores < WARM_SLOT_FLOOR.cpu_millicores or shape.memory_mib < WARM_SLOT_FLOOR.memory_mib
    if pool.warm_slot_shape is None and too_small:
        raise ValueError(
            f"{key}.warmSlotShape: the default shape ({shape.cpu_millicores}m, {shape.memory_mib} MiB) is below a "
            f"usable pod ({WARM_SLOT_FLOOR.cpu_millicores}m, {WARM_SLOT_FLOOR.memory_mib} MiB); set cpuMillicores "
            "and memoryMib, or fewer sharing replicas, or larger instance types"
        )
    for node in held.nodes:
        per_node, room = node.slots, node.allocatable
        if per_node * shape.cpu_millicores > room.cpu_millicores or per_node * shape.memory_mib > room.memory_mib:
            raise ValueError(
                f"{key}.warmSlotShape: {per_node} slots of {shape.cpu_millicores}m / {shape.memory_mib} MiB do not fit "
                f"one {node.instance_type} ({room.cpu_millicores}m / {room.memory_mib} MiB allocatable after system "
                "reservations); lower cpuMillicores or memoryMib"
            )
    if not held.within_limits(slots):
        raise ValueError(
            f"{key}.warmGpuSlots: the nodes holding {slots} warm slots exceed cpuLimit {pool.cpu_limit} or gpuLimit "
            f"{pool.gpu_limit} on every instance type of the pool; raise the limits or lower warmGpuSlots"
        )


def _check_timetable(resolved: KarpenterPool) -> None:
    """A pool's sessions: one time zone, room in the budgets and limits, and expiry never ends a session."""
    pool, key, sessions = resolved.settings, resolved.key, resolved.sessions
    first = sessions[0]
    for session in sessions[1:]:
        if session.timezone != first.timezone:
            raise ValueError(
                f"{session.key}.timezone: sessions on pool '{pool.name}' share one time zone (its CapacityBuffer "
                f"follows one weekly schedule); {first.key} uses {first.timezone}"
            )
    if len(pool.disruption_budgets) + len(sessions) > 50:
        raise ValueError(
            f"{key}.disruptionBudgets: {len(pool.disruption_budgets)} budgets plus one window per session "
            f"({len(sessions)}) exceed the NodePool's 50"
        )
    lead = resolved.lead_minutes
    grace = timetable.parse_seconds(pool.termination_grace_period) or 0
    needed = resolved.session_hold_seconds + timetable.SESSION_POD_GRACE_SECONDS
    if grace < needed:
        longest = max(sessions, key=lambda s: s.duration_minutes)
        raise ValueError(
            f"{key}.terminationGracePeriod: {pool.termination_grace_period} could end {longest.key} early: a session "
            f"pod may land on a node just before its expireAfter ({pool.expire_after}); expiry then drains the node "
            f"and deletes do-not-disrupt pods {timetable.SESSION_POD_GRACE_SECONDS}s before terminationGracePeriod "
            f"runs out, so it must cover lead time {lead}m + duration {longest.duration_minutes}m + "
            f"{timetable.SESSION_POD_GRACE_SECONDS}s: set at least {timetable.format_minutes(-(-needed // 60))}"
        )
    expire = timetable.parse_seconds(pool.expire_after)
    if expire is not None and expire <= lead * 60:
        raise ValueError(
            f"{key}.expireAfter: {pool.expire_after} is not longer than the lead time {lead}m: the node warmed for "
            "a session would expire before the session starts"
        )
    _check_timetable_peak(resolved)


def _check_timetable_peak(resolved: KarpenterPool) -> None:
    pool, key, sessions, lead = resolved.settings, resolved.key, resolved.sessions, resolved.lead_minutes
    held = timetable.held_profile(pool.warm_gpu_slots, sessions, lead)
    peak = max(held)
    at_peak = max(sessions, key=lambda s: timetable.peak_in_windows(held, s, lead))
    if resolved.within_limits(peak):
        return
    raise ValueError(
        f"{at_peak.key}.learners: at its peak the pool holds {peak} slots (warmGpuSlots plus the learners of "
        f"overlapping sessions), whose nodes exceed {key} cpuLimit {pool.cpu_limit} or gpuLimit {pool.gpu_limit} on "
        "every instance type of the pool; raise the limits or lower learners"
    )
