"""The checks across sections, run once every section is valid on its own (`load_settings` calls `check_stack`).

Each rule raises `ValueError("<key path>: <what is wrong and what is allowed>")`; the loader folds the key path
into the error's location. The first rule that fails is the one reported, so their order is part of the contract.
"""

from __future__ import annotations

import itertools

from components.facts import gpu_catalog, node_allocatable, quantity, timetable
from components.facts.constants import DEMO_POD_REQUESTS
from components.settings.checks import fit_placement, hubs, pools
from components.settings.labs import LabSettings
from components.settings.stack import StackSettings


def check_stack(settings: StackSettings) -> None:
    """Every cross-section rule, in the order they are reported."""
    gpu_nodes_fit(settings)
    fast_image_pull_fits_instances(settings)
    pools.sharing_fits_instance_types(settings)
    pools.warm_headroom_fits(settings)
    pools.timetable_fits(settings)
    karpenter_fits_system_nodes(settings)
    hubs.hubs_fit_the_cluster(settings)
    labs_fit_the_cluster(settings)
    # Last: every pod the plan runs fits a node it may run on (checks/fit.py).
    fit_placement.check(settings)


def gpu_nodes_fit(settings: StackSettings) -> None:
    """GPU nodes can address their maxPods; the demo has GPU capacity to run on."""
    if not settings.cluster.vpc_cni.prefix_delegation:
        limit = min((gpu_catalog.eni_max_pods(t) for t in settings.gpu_instance_types), default=None)
        if limit is not None and settings.gpu_nodes.max_pods > limit:
            raise ValueError(
                f"gpuNodes.maxPods: {settings.gpu_nodes.max_pods} exceeds the {limit} pods the VPC CNI can address on the "
                "smallest GPU instance type without prefix delegation; set cluster.vpcCni.prefixDelegation: true "
                f"or maxPods <= {limit}"
            )
    if settings.demo.enabled and not (
        settings.gpu_node_group.enabled or (settings.karpenter.enabled and settings.karpenter.node_pools)
    ):
        raise ValueError("demo.enabled: needs GPU capacity (gpuNodeGroup.enabled or a karpenter nodePool)")


def fast_image_pull_fits_instances(settings: StackSettings) -> None:
    """fastImagePull only where nodeadm honours it: every GPU type of at least its minimum size."""
    if settings.gpu_nodes.fast_image_pull:
        small = [
            t for t in settings.gpu_instance_types if not node_allocatable.instance_meets_fast_image_pull_minimum(t)
        ]
        if small:
            raise ValueError(
                f"gpuNodes.fastImagePull: {', '.join(small)} are below nodeadm's minimum "
                f"({node_allocatable.FAST_IMAGE_PULL_MIN_VCPUS} vCPUs and "
                f"{node_allocatable.FAST_IMAGE_PULL_MIN_MEMORY_MIB // 1024} GiB), where the gate is ignored"
            )


def karpenter_fits_system_nodes(settings: StackSettings) -> None:
    """Each Karpenter controller replica gets a system node of its own."""
    # The chart's required anti-affinity puts each controller replica on its own (system) node.
    if settings.karpenter.enabled and settings.karpenter.replicas > settings.system_nodes.min_size:
        raise ValueError(
            f"karpenter.replicas: {settings.karpenter.replicas} exceeds systemNodes.minSize "
            f"{settings.system_nodes.min_size}; each Karpenter controller replica needs its own system node"
        )


def labs_fit_the_cluster(settings: StackSettings) -> None:
    """Lab names once, members not admins nor the deployer, the demo inside its lab's quota."""
    names = [lab.name for lab in settings.labs]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"labs: names must be unique (repeated: {', '.join(repeated)})")
    admins = settings.cluster.admin_principal_arns
    deployer = settings.cluster.deployer_principal_arn
    for index, lab in enumerate(settings.labs):
        if deployer in lab.members:
            raise ValueError(
                f"labs.{index}.members.{lab.members.index(deployer)}: {deployer} is "
                "gpu-platform:cluster.deployerPrincipalArn, already cluster admin through the cluster-creator "
                "entry; EKS allows one access entry per principal"
            )
        for member_index, member in enumerate(lab.members):
            if member in admins:
                raise ValueError(
                    f"labs.{index}.members.{member_index}: {member} is also gpu-platform:cluster."
                    f"adminPrincipalArns[{admins.index(member)}]; an admin needs no lab access: remove it "
                    "from one of the two (EKS allows one access entry per principal)"
                )
    if settings.demo.enabled and settings.labs:
        demo_lab = next((lab for lab in settings.labs if lab.name == settings.demo.namespace), None)
        if demo_lab is None:
            raise ValueError(
                f"demo.namespace: '{settings.demo.namespace}' must be one of the labs ({', '.join(names)})"
            )
        if demo_lab.gpu_slots < settings.demo.replicas:
            raise ValueError(
                f"demo.replicas: {settings.demo.replicas} pods need {settings.demo.replicas} GPU slots; "
                f"lab '{demo_lab.name}' has gpuSlots {demo_lab.gpu_slots}"
            )
        _check_demo_fits_lab_quota(settings.demo.replicas, demo_lab, settings.labs.index(demo_lab))
    for index, lab in enumerate(settings.labs):
        demo_pods = settings.demo.replicas if settings.demo.enabled and settings.demo.namespace == lab.name else 0
        _check_sessions_fit_the_lab(demo_pods, lab, index)


def _check_demo_fits_lab_quota(replicas: int, lab: LabSettings, index: int) -> None:
    """The demo's pods request cpu and memory inside the lab's ResourceQuota (ValueError when they cannot fit).

    The demo Deployment skips await, so a quota too small would refuse its pods without failing `up`."""
    for resource in ("cpu", "memory"):
        request = DEMO_POD_REQUESTS[resource]
        quota = getattr(lab, resource)
        if quantity.times(request, replicas) > quantity.parse(quota):
            raise ValueError(
                f"demo.replicas: {replicas} demo pods request {replicas} x {request} {resource}, more than lab "
                f"'{lab.name}' allows (gpu-platform:labs[{index}].{resource}: {quota}); raise the lab's {resource} or lower "
                "demo.replicas"
            )


def _check_sessions_fit_the_lab(demo_pods: int, lab: LabSettings, index: int) -> None:
    """The lab's sessions in class at once, beside the demo's pods (which hold their slots all week), fit gpuSlots.

    The lab's ResourceQuota (requests.nvidia.com/gpu = gpuSlots) would refuse the learners beyond it. Sessions in
    several time zones are compared under every pair of their zones' UTC offsets (standard and daylight time)."""
    sessions = [
        timetable.Session(lab.name, f"labs.{index}.sessions.{j}", s.node_pool or "", s.schedule, s.timezone,
                          s.duration_minutes, s.learners)
        for j, s in enumerate(lab.sessions)
    ]  # fmt: skip
    if not sessions:
        return
    zones = sorted({s.timezone for s in sessions})
    # One zone: its own clock (offset 0); several: each combination of their offsets, on the UTC clock.
    offset_sets = [(0,)] if len(zones) == 1 else [timetable.utc_offsets(zone) for zone in zones]
    for offsets in itertools.product(*offset_sets):
        shift = dict(zip(zones, offsets, strict=True))
        profile = timetable.in_class_profile(demo_pods, sessions, shift)
        peak = max(profile, default=0)
        if peak <= lab.gpu_slots:
            continue
        minute = profile.index(peak)
        at_peak = [
            s for s in sessions
            if any((minute - (start - shift[s.timezone])) % timetable.WEEK < s.duration_minutes for start in s.starts)
        ]  # fmt: skip
        offsets_said = ", ".join(f"{zone} at UTC{shift[zone] / 60:+g}h" for zone in zones)
        clock = zones[0] if len(zones) == 1 else f"UTC (when {offsets_said})"
        when = f"{timetable.DAY_NAMES[minute // timetable.DAY]} {minute % timetable.DAY // 60:02d}:{minute % 60:02d}"
        together = " + ".join(f"{s.learners} (sessions[{s.key.rpartition('.')[2]}])" for s in at_peak)
        demo = f" + the demo's {demo_pods} pods (demo.replicas, in this lab)" if demo_pods else ""
        raise ValueError(
            f"{at_peak[-1].key}.learners: on {when} {clock} these sessions are in class together: {together} "
            f"learners{demo} need {peak} GPU slots; gpu-platform:labs[{index}].gpuSlots is {lab.gpu_slots}: raise "
            f"gpuSlots to at least {peak}, lower learners, or move a session"
        )
