"""A lab's JupyterHub fits the cluster: known pools, room in the lab's quota, notebooks that outlive node expiry,
images GPU nodes can pre-pull, a certificate in the stack's region."""

from __future__ import annotations

from decimal import Decimal

from components.facts import quantity, timetable
from components.facts.constants import HUB_NAMESPACE_SUFFIX
from components.settings.gpu import PRE_PULL_MAX
from components.settings.hub import HubSettings
from components.settings.labs import LabSettings
from components.settings.stack import StackSettings

# Kubernetes namespaces are DNS labels (RFC 1123).
DNS_LABEL_MAX = 63


def hubs_fit_the_cluster(settings: StackSettings) -> None:
    """Every lab's hub: known pools, room in the lab's quota, images to pre-pull, a certificate in the region."""
    _check_hostnames_once(settings)
    _check_hub_namespaces(settings)
    pool_names = [pool.name for pool in settings.karpenter.node_pools] if settings.karpenter.enabled else []
    for index, lab in enumerate(settings.labs):
        hub = lab.hub
        if hub is None:
            continue
        key = f"labs.{index}.hub"
        unknown = [name for name in hub.pools or [] if name not in pool_names]
        if unknown:
            allowed = ", ".join(pool_names) or "none: karpenter is off or has no nodePools"
            raise ValueError(f"{key}.pools: {unknown} not a Karpenter pool this lab can use; allowed: {allowed}")
        if not settings.resolved.hub_pools(hub):
            raise ValueError(f"{key}: a hub offers GPU slots from Karpenter pools; enable karpenter with a nodePool")
        _check_hub_quota(settings, lab, f"labs.{index}")
        _check_hub_outlives_expiry(settings, hub, key)
        if len(settings.gpu_node_bootstrap.pre_pull_images) > PRE_PULL_MAX:
            raise ValueError(
                f"{key}.image: GPU nodes would pre-pull more than {PRE_PULL_MAX} images "
                "(gpuNodes.prePullImages plus every hub image); use fewer"
            )
        if hub.certificate_arn is not None:
            region = hub.certificate_arn.split(":")[3]
            if region != settings.region:
                raise ValueError(
                    f"{key}.certificateArn: the certificate is in {region}; the load balancer needs one in "
                    f"{settings.region} (ACM certificates are regional)"
                )


def _check_hostnames_once(settings: StackSettings) -> None:
    """Each hub its own hostname: two hubs on one name would share its DNS record and OAuth callback URL."""
    claimed: dict[str, int] = {}
    for index, lab in enumerate(settings.labs):
        if lab.hub is None or lab.hub.hostname is None:
            continue
        name = lab.hub.hostname.lower()  # DNS names are case-insensitive
        if name in claimed:
            raise ValueError(
                f"labs.{index}.hub.hostname: '{lab.hub.hostname}' is already gpu-platform:labs[{claimed[name]}]"
                ".hub.hostname; each hub needs a hostname of its own (its own CNAME to its own load balancer, "
                "and its own OAuth callback URL)"
            )
        claimed[name] = index


def _check_hub_namespaces(settings: StackSettings) -> None:
    """Each hub's namespace `<lab>-hub` is a DNS label and no lab's own namespace (a lab named `x-hub` beside a
    lab `x` with a hub would share it, and its members would get rights where the hub's Secrets live)."""
    labs = {lab.name: index for index, lab in enumerate(settings.labs)}
    for index, lab in enumerate(settings.labs):
        if lab.hub is None:
            continue
        namespace = f"{lab.name}{HUB_NAMESPACE_SUFFIX}"
        if len(namespace) > DNS_LABEL_MAX:
            raise ValueError(
                f"labs.{index}.name: '{lab.name}' is too long for its hub's namespace '{namespace}' (a DNS label, at "
                f"most {DNS_LABEL_MAX} characters); a lab with a hub has a name of at most "
                f"{DNS_LABEL_MAX - len(HUB_NAMESPACE_SUFFIX)} characters"
            )
        if namespace in labs:
            raise ValueError(
                f"labs.{labs[namespace]}.name: '{namespace}' is the namespace of gpu-platform:labs[{index}]'s hub "
                f"(`<lab>{HUB_NAMESPACE_SUFFIX}`); rename the lab to a name not ending in '{HUB_NAMESPACE_SUFFIX}' "
                "after another lab's name"
            )


def _check_hub_quota(settings: StackSettings, lab: LabSettings, key: str) -> None:
    """The lab's cpu and memory quota hold `gpuSlots` notebooks of its largest GPU profile (ValueError if not)."""
    assert lab.hub is not None
    shapes = [pool.warm_slot_shape for pool in settings.resolved.hub_pools(lab.hub)]
    cores = Decimal(lab.gpu_slots * max(shape.cpu_millicores for shape in shapes)) / 1000
    mib = lab.gpu_slots * max(shape.memory_mib for shape in shapes)
    if cores > quantity.parse(lab.cpu):
        raise ValueError(
            f"{key}.cpu: {lab.cpu} cannot hold the hub's {lab.gpu_slots} GPU notebooks ({cores:g} cores: gpuSlots x "
            f"the largest GPU profile); raise cpu to at least {cores:g}"
        )
    if mib * 1024**2 > quantity.parse(lab.memory):
        raise ValueError(
            f"{key}.memory: {lab.memory} cannot hold the hub's {lab.gpu_slots} GPU notebooks ({mib} MiB: gpuSlots x "
            f"the largest GPU profile); raise memory to at least {-(-mib // 1024)}Gi"
        )


def _check_hub_outlives_expiry(settings: StackSettings, hub: HubSettings, key: str) -> None:
    """Expiry never ends a notebook: every pool the hub offers drains for at least maxHours (+ the pod's grace).

    A notebook may start on a node just before its expireAfter; expiry then drains the node and deletes even
    do-not-disrupt pods when terminationGracePeriod runs out (aws/karpenter-provider-aws v1.14.1
    website/content/en/v1.14/concepts/disruption.md), so that grace must cover the hub's maximum server age.
    """
    needed = hub.max_seconds + timetable.SESSION_POD_GRACE_SECONDS
    for resolved in settings.resolved.hub_pools(hub):
        pool = resolved.settings
        grace = timetable.parse_seconds(pool.termination_grace_period) or 0
        if grace < needed:
            raise ValueError(
                f"{key}.maxHours: {hub.max_hours}h notebooks on pool '{pool.name}' could be ended by expiry: its "
                f"{resolved.key}.terminationGracePeriod {pool.termination_grace_period} must cover "
                f"maxHours + {timetable.SESSION_POD_GRACE_SECONDS}s; set it to at least "
                f"{timetable.format_minutes(-(-needed // 60))}, lower maxHours, or leave the pool out of {key}.pools"
            )
    # The CPU profile's notebooks run on the CPU user pool: the same holds there.
    cpu_pool = settings.karpenter.cpu_user_pool
    if (timetable.parse_seconds(cpu_pool.termination_grace_period) or 0) < needed:
        raise ValueError(
            f"{key}.maxHours: {hub.max_hours}h CPU notebooks could be ended by expiry: karpenter.cpuUserPool."
            f"terminationGracePeriod {cpu_pool.termination_grace_period} must cover maxHours + "
            f"{timetable.SESSION_POD_GRACE_SECONDS}s; set it to at least {timetable.format_minutes(-(-needed // 60))}"
            " or lower maxHours"
        )


def hub_warnings(settings: StackSettings) -> list[tuple[str, str]]:
    """`(key path, message)` for a hub whose maxHours is shorter than a class of its own lab.

    A warning, not an error: the config works (the hub stops the notebook at maxHours, however busy, and the
    learner may start a new one while a slot is free), and a short cap can be meant (a class with a break,
    slots freed sooner). An error is kept for what a receiver refuses or what breaks without a sign."""
    found = []
    for index, lab in enumerate(settings.labs):
        if lab.hub is None or not lab.sessions:
            continue
        longest = max(range(len(lab.sessions)), key=lambda j: lab.sessions[j].duration_minutes)
        session = lab.sessions[longest]
        if session.duration_minutes > lab.hub.max_hours * 60:
            found.append(
                (
                    f"gpu-platform:labs[{index}].hub.maxHours",
                    f"{lab.hub.max_hours}h is shorter than gpu-platform:labs[{index}].sessions[{longest}].duration "
                    f"{session.duration}: the hub stops a learner's notebook {lab.hub.max_hours}h into the class, "
                    f"however busy; raise maxHours to at least {-(-session.duration_minutes // 60)} if that is "
                    "not meant",
                )
            )
    return found
