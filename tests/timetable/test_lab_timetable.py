"""The lab timetable: session settings and their rules, the weekly buffer step function, the CronJobs and their RBAC,
the NodePool budget windows across daylight saving time, the do-not-disrupt session pods, and the summary figures."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from components.facts import cron, timetable
from components.facts.constants import (
    DO_NOT_DISRUPT_ANNOTATION,
    GPU_TAINT,
    NODEPOOL_LABEL,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    TIMETABLE_NAMESPACE,
    gpu_node_labels,
)
from components.karpenter import controller_inputs, gpu_node_pool
from components.renderers.karpenter import karpenter_values, warm_headroom_manifests
from components.renderers.timetable import timetable_manifests
from components.settings import SettingsError, StackSettings, load_settings
from offline.plan import Plan
from tests.conftest import PROJECT_DIR
from tests.support.crd_validation import validate_custom_resource
from tests.support.k8s_validation import pod_can_land_on, tolerates, validate_core_object
from tests.support.settings import config_for, settings_for

UTC = ZoneInfo("UTC")
PACIFIC = ZoneInfo("America/Los_Angeles")
# Tuesdays at 17:00 Pacific: one in PST (UTC-8), one in PDT (UTC-7).
JANUARY_CLASS = datetime(2027, 1, 12, 17, 0, tzinfo=PACIFIC)
JULY_CLASS = datetime(2027, 7, 13, 17, 0, tzinfo=PACIFIC)


def lab(name: str, slots: int, *sessions: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "gpuSlots": slots, "sessions": list(sessions)}


def session(schedule: str, learners: int, duration: str = "2h", zone: str = "America/Los_Angeles") -> dict[str, Any]:
    return {"schedule": schedule, "timezone": zone, "duration": duration, "learners": learners}


def problems(config: dict[str, str]) -> dict[str, str]:
    with pytest.raises(SettingsError) as caught:
        load_settings(config)
    return dict(caught.value.problems)


def fires(schedule: str, moment: datetime) -> bool:
    """Whether a five-field cron fires at this wall-clock minute (Python weekday: Monday = 0; cron: Sunday = 0)."""
    return cron.fires_at(schedule, moment.minute, moment.hour, moment.day, moment.month, (moment.weekday() + 1) % 7)


def budget_active(budget: dict[str, Any], moment: datetime) -> bool:
    """Karpenter's `Budget.IsActive`: the UTC schedule fired within `duration` before `moment`."""
    if "schedule" not in budget:
        return True
    minutes = timetable.parse_seconds(budget["duration"])
    assert minutes is not None
    utc = moment.astimezone(UTC).replace(second=0, microsecond=0)
    return any(fires(budget["schedule"], utc - timedelta(minutes=m)) for m in range(minutes // 60 + 1))


def allowed_disruptions(node_pool: dict[str, Any], moment: datetime) -> int:
    """The most restrictive active budget's node count (counts only; the pools here use no percentages there)."""
    active = [b for b in node_pool["spec"]["disruption"]["budgets"] if budget_active(b, moment)]
    return min(int(b["nodes"]) for b in active)


# --- settings ----------------------------------------------------------------------------------------------------


def test_staging_timetable_is_two_pacific_evenings_of_six_learners() -> None:
    settings = settings_for("staging")
    (pool,) = settings.karpenter.node_pools
    (only,) = settings.resolved.pool(pool.name).sessions
    assert (only.schedule, only.timezone, only.duration_minutes, only.learners) == (
        "0 17 * * tue,thu",
        "America/Los_Angeles",
        120,
        6,
    )
    assert len(only.starts) == 2
    # The seed's instance type and expiry stay; the grace period covers the session.
    assert "g4dn.xlarge" in pool.instance_types and pool.expire_after == "120m"
    needed = settings.resolved.pool(pool.name).session_hold_seconds + timetable.SESSION_POD_GRACE_SECONDS
    assert (timetable.parse_seconds(pool.termination_grace_period) or 0) >= needed


def test_lead_time_is_the_modelled_time_to_gpu_rounded_up() -> None:
    # docs/operations.md "Time to GPU": batch 10 s, launch to Ready ~100 s, plugin seconds, pull 2m18s (1m07s with SOCI),
    # plus the CronJob's own pod start.
    assert timetable.lead_minutes_for(pre_pulls=True, fast_image_pull=True) == 5  # 60+10+100+30+67 = 267 s
    assert timetable.lead_minutes_for(pre_pulls=True, fast_image_pull=False) == 6  # 338 s
    assert timetable.lead_minutes_for(pre_pulls=False, fast_image_pull=False) == 4  # 200 s
    settings = settings_for("staging")
    assert settings.resolved.pool(settings.karpenter.node_pools[0].name).lead_minutes == 5


def test_a_session_longer_than_the_grace_period_is_rejected() -> None:
    config = config_for("staging", pool={"terminationGracePeriod": "2h"})
    found = problems(config)
    key = "gpu-platform:karpenter.nodePools[0].terminationGracePeriod"
    assert set(found) == {key}
    assert "labs.0.sessions.0" in found[key] and "expireAfter (120m)" in found[key]
    assert "set at least 2h6m" in found[key]  # 5m lead + 2h + 30s pod grace, rounded up
    # Just enough is accepted; so is an unchanged expireAfter of 120m, shorter than the session.
    assert (
        settings_for("staging", pool={"terminationGracePeriod": "2h6m"}).karpenter.node_pools[0].expire_after == "120m"
    )


def test_expiry_before_the_session_starts_is_rejected() -> None:
    found = problems(config_for("staging", pool={"expireAfter": "5m"}))
    assert "lead time 5m" in found["gpu-platform:karpenter.nodePools[0].expireAfter"]


@pytest.mark.parametrize(
    ("sessions", "key", "words"),
    [
        ([session("0 17 * * tue", 7)], "gpu-platform:labs[0].sessions[0].learners", "gpuSlots 6"),
        ([session("0 17 1 * *", 2)], "gpu-platform:labs[0].sessions[0].schedule", "weekly start"),
        ([session("0 17,19 * * tue", 2)], "gpu-platform:labs[0].sessions[0].schedule", "one minute and one hour"),
        ([session("0 17 * * tue", 2, zone="Pacific/Nowhere")], "gpu-platform:labs[0].sessions[0].timezone", "IANA"),
        ([session("0 17 * * tue", 2, zone="Local")], "gpu-platform:labs[0].sessions[0].timezone", "IANA"),
        ([session("0 17 * * tue", 2, duration="13h")], "gpu-platform:labs[0].sessions[0].duration", "at most 12h"),
        ([session("0 17 * * tue", 2, duration="90s")], "gpu-platform:labs[0].sessions[0].duration", "hours and/or"),
        (
            [session("0 17 * * tue", 2), session("0 9 * * wed", 2, zone="Europe/Berlin")],
            "gpu-platform:labs[0].sessions[1].timezone",
            "one time zone",
        ),
    ],
)
def test_bad_sessions_name_their_key(sessions: list[dict[str, Any]], key: str, words: str) -> None:
    found = problems(config_for("staging", labs=[lab("learning-lab", 6, *sessions)]))
    assert key in found, found
    assert words in found[key]


def test_a_session_needs_its_pool_named_when_there_are_several() -> None:
    values = config_for("staging", labs=[lab("learning-lab", 6, session("0 17 * * tue", 6))])
    karpenter = json.loads(values["gpu-platform:karpenter"])
    karpenter["nodePools"].append({"name": "l4-pool", "instanceTypes": ["g6.xlarge"], "gpuLimit": 2})
    values["gpu-platform:karpenter"] = json.dumps(karpenter)
    assert "one of g4-nodepool, l4-pool" in problems(values)["gpu-platform:labs[0].sessions[0].nodePool"]
    labs = json.loads(values["gpu-platform:labs"])
    labs[0]["sessions"][0]["nodePool"] = "l4"
    values["gpu-platform:labs"] = json.dumps(labs)
    assert "not a karpenter.nodePools name" in problems(values)["gpu-platform:labs[0].sessions[0].nodePool"]


def test_a_peak_beyond_the_pool_limits_is_rejected() -> None:
    # 3 warm + 22 learners = 25 slots > gpuLimit 8 x 3 replicas = 24.
    found = problems(config_for("staging", labs=[lab("learning-lab", 22, session("0 17 * * tue", 22))]))
    assert "25 slots" in found["gpu-platform:labs[0].sessions[0].learners"]


def test_the_timetable_namespace_is_reserved() -> None:
    found = problems(config_for("staging", labs=[lab(TIMETABLE_NAMESPACE, 1)]))
    assert "system namespace" in found["gpu-platform:labs[0].name"]


# --- the step function and the CronJobs --------------------------------------------------------------------------


def overlapping() -> StackSettings:
    """Two labs on staging's pool: 6 learners at 17:00 and 4 at 17:02 on Tuesdays, 4 alone on Thursdays."""
    return settings_for(
        "staging",
        pool={"terminationGracePeriod": "3h"},
        labs=[
            # 9 slots: 6 learners beside staging's 3 demo pods, which run in this lab.
            lab("learning-lab", 9, session("0 17 * * tue", 6)),
            lab("robotics-lab", 4, session("2 17 * * tue,thu", 4, duration="1h")),
        ],
    )


def test_overlapping_sessions_add_up_in_the_buffer() -> None:
    settings = overlapping()
    pool = settings.karpenter.node_pools[0]
    changes = {
        (c.hour, c.minute, c.days): c.replicas
        for c in timetable.buffer_changes(3, settings.resolved.pool(pool.name).sessions, 5)
    }
    tue, thu = 2, 4
    assert changes == {
        (16, 55, (tue,)): 3 + 6,
        (16, 57, (tue,)): 3 + 6 + 4,  # both labs warming
        (16, 57, (thu,)): 3 + 4,
        (17, 0, (tue,)): 3 + 4,  # learning-lab started: its nodes are held by the budget window, not the buffer
        (17, 2, (tue, thu)): 3,
    }
    # The nodes held in the windows add up too: 3 + 6 + 4 from 16:57 to 18:02 on Tuesdays.
    held = timetable.held_profile(3, settings.resolved.pool(pool.name).sessions, 5)
    assert held[tue * timetable.DAY + 17 * 60 + 30] == 13
    assert held[thu * timetable.DAY + 17 * 60 + 30] == 7
    assert held[tue * timetable.DAY + 19 * 60] == 3


def test_cronjobs_set_the_step_function_in_the_sessions_zone() -> None:
    settings = overlapping()
    pool = settings.karpenter.node_pools[0]
    jobs = timetable_manifests.cronjobs(settings.resolved.pool(pool.name))
    by_name = {job["metadata"]["name"]: job for job in jobs}
    assert sorted(by_name) == [
        "g4-nodepool-1655-to-9",
        "g4-nodepool-1657-to-13",
        "g4-nodepool-1657-to-7",
        "g4-nodepool-1700-to-7",
        "g4-nodepool-1702-to-3",
    ]
    for job in jobs:
        assert job["spec"]["timeZone"] == "America/Los_Angeles"
        # Never starts after the next change (2 minutes later at the closest).
        assert job["spec"]["startingDeadlineSeconds"] == 119
    args = by_name["g4-nodepool-1657-to-13"]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert json.loads(args[-1].removeprefix("--patch=")) == {"spec": {"replicas": 13}}


@pytest.mark.parametrize("class_start", [JANUARY_CLASS, JULY_CLASS], ids=["january-pst", "july-pdt"])
def test_staging_class_is_warm_and_untouched_across_dst(class_start: datetime) -> None:
    settings = settings_for("staging")
    pool = settings.karpenter.node_pools[0]
    jobs = {job["spec"]["schedule"]: job for job in timetable_manifests.cronjobs(settings.resolved.pool(pool.name))}
    raise_at, lower_at = class_start - timedelta(minutes=5), class_start
    # The CronJobs fire in Pacific wall time whatever the offset: 16:55 up to 9 slots, 17:00 back to 3.
    raising = [s for s in jobs if fires(s, raise_at)]
    lowering = [s for s in jobs if fires(s, lower_at)]
    assert [jobs[s]["metadata"]["name"] for s in raising] == ["g4-nodepool-1655-to-9"]
    assert [jobs[s]["metadata"]["name"] for s in lowering] == ["g4-nodepool-1700-to-3"]
    # Karpenter reads budgets in UTC: no node may be disrupted from the raise to the end, in PST and PDT alike.
    node_pool = gpu_node_pool(settings.resolved.pool(pool.name))
    minute = raise_at
    while minute < class_start + timedelta(hours=2):
        assert allowed_disruptions(node_pool, minute) == 0, minute.astimezone(UTC)
        minute += timedelta(minutes=1)
    assert allowed_disruptions(node_pool, class_start + timedelta(hours=3, minutes=5)) == 1
    assert allowed_disruptions(node_pool, class_start - timedelta(hours=2)) == 1


def test_budget_windows_cover_both_offsets_only_where_the_zone_has_dst() -> None:
    pacific = timetable.Session("a", "labs.0.sessions.0", "p", "0 17 * * tue,thu", "America/Los_Angeles", 120, 6)
    tokyo = timetable.Session("a", "labs.0.sessions.0", "p", "0 17 * * tue,thu", "Asia/Tokyo", 120, 6)
    assert timetable.utc_offsets("America/Los_Angeles") == (-480, -420)
    # 16:55 PDT = 23:55 UTC; until 19:00 PST = 03:00 UTC next day.
    assert timetable.budget_window(pacific, 5) == timetable.BudgetWindow("55 23 * * tue,thu", 185)
    # 16:55 JST = 07:55 UTC the same day; no DST, no extra hour.
    assert timetable.budget_window(tokyo, 5) == timetable.BudgetWindow("55 7 * * tue,thu", 125)
    # Crossing midnight backwards moves the weekday: 08:55 in Tokyo on Monday is Sunday 23:55 UTC.
    early = timetable.Session("a", "k", "p", "0 9 * * mon", "Asia/Tokyo", 60, 1)
    assert timetable.budget_window(early, 5).schedule == "55 23 * * sun"


# --- the objects in both plans ---------------------------------------------------------------------------------


def timetable_objects(plan: Plan) -> list[dict[str, Any]]:
    return [obj for obj in plan.manifests.values() if obj["metadata"].get("namespace") == TIMETABLE_NAMESPACE] + [
        obj for obj in plan.objects("Role") + plan.objects("RoleBinding") if "timetable" in obj["metadata"]["name"]
    ]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_timetable_objects_pass_the_strict_schemas(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    objects = [
        *timetable_objects(plan),
        *(o for o in plan.objects("Namespace") if o["metadata"]["name"] == TIMETABLE_NAMESPACE),
    ]
    kinds = {obj["kind"] for obj in objects}
    assert kinds == {"Namespace", "NetworkPolicy", "ServiceAccount", "Role", "RoleBinding", "CronJob"}
    for obj in objects:
        assert validate_core_object(obj, "1.35") == []
    for node_pool in plan.objects("NodePool"):
        assert validate_custom_resource(node_pool) == []
    for buffer in plan.objects("CapacityBuffer"):
        assert validate_custom_resource(buffer) == []


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_each_cronjob_may_patch_only_its_pools_buffer(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    buffers = {(b["metadata"]["namespace"], b["metadata"]["name"]): b for b in plan.objects("CapacityBuffer")}
    roles = {(r["metadata"]["namespace"], r["metadata"]["name"]): r for r in plan.objects("Role")}
    bindings = plan.objects("RoleBinding")
    accounts = {(a["metadata"]["namespace"], a["metadata"]["name"]) for a in plan.objects("ServiceAccount")}
    cronjobs = plan.objects("CronJob")
    assert cronjobs
    for job in cronjobs:
        pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        account = (job["metadata"]["namespace"], pod["serviceAccountName"])
        assert account in accounts
        resource, name, namespace_flag = pod["containers"][0]["args"][1:4]
        plural, _, group = resource.partition(".")
        namespace = namespace_flag.removeprefix("--namespace=")
        buffer = buffers[(namespace, name)]
        assert buffer["apiVersion"].split("/")[0] == group and plural == "capacitybuffers"
        # The one binding of this account, to a Role in the buffer's namespace granting get/patch on that name only.
        (binding,) = [
            b
            for b in bindings
            if {"kind": "ServiceAccount", "name": account[1], "namespace": account[0]} in b["subjects"]
        ]
        assert binding["metadata"]["namespace"] == namespace and binding["roleRef"]["kind"] == "Role"
        role = roles[(namespace, binding["roleRef"]["name"])]
        assert role["rules"] == [
            {"apiGroups": [group], "resources": ["capacitybuffers"], "resourceNames": [name], "verbs": ["get", "patch"]}
        ]


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_cronjob_pods_are_restricted_and_stay_off_gpu_nodes(plans: dict[str, Plan], stack: str) -> None:
    plan = plans[stack]
    (namespace,) = [o for o in plan.objects("Namespace") if o["metadata"]["name"] == TIMETABLE_NAMESPACE]
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    system = {SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE, "kubernetes.io/os": "linux"}
    for job in plan.objects("CronJob"):
        pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False and context["capabilities"] == {"drop": ["ALL"]}
            assert "@sha256:" in container["image"]
        assert not any(tolerates(t, GPU_TAINT) for t in pod.get("tolerations", []))
        assert pod_can_land_on(pod, system)
        for node_pool in plan.objects("NodePool"):
            gpu_node = {**gpu_node_labels("time-slicing-3"), NODEPOOL_LABEL: node_pool["metadata"]["name"], **system}
            assert not pod_can_land_on(pod, gpu_node)


def test_pools_with_sessions_keep_a_buffer_even_without_warm_slots(prod_plan: Plan) -> None:
    settings = settings_for("prod")
    assert all(pool.warm_gpu_slots == 0 for pool in settings.karpenter.node_pools)
    assert {b["metadata"]["name"]: b["spec"]["replicas"] for b in prod_plan.objects("CapacityBuffer")} == {
        "t4-shared-warm-gpu": 0,
        "a10g-inference-warm-gpu": 0,
    }
    assert karpenter_values.helm_values(controller_inputs(settings), cluster_endpoint="e", interruption_queue="q")[
        "settings"
    ]["featureGates"]["capacityBuffer"]
    assert len(warm_headroom_manifests.pools_with_headroom(settings.resolved.karpenter_pools)) == 2


def test_session_pods_carry_do_not_disrupt(staging_plan: Plan) -> None:
    (demo,) = [d for d in staging_plan.objects("Deployment") if d["metadata"]["namespace"] == "learning-lab"]
    assert demo["spec"]["template"]["metadata"]["annotations"][DO_NOT_DISRUPT_ANNOTATION] == "true"


# --- summary figures ---------------------------------------------------------------------------------------------


def test_summary_figures_for_staging() -> None:
    settings = settings_for("staging")
    resolved = settings.resolved
    (peak,) = resolved.session_peaks
    # 3 warm + 6 learners = 9 slots; g4dn.xlarge holds 3 (1 T4 x 3 replicas): 3 nodes, 12 vCPUs; on g4dn.2xlarge
    # (also 1 T4) 3 nodes of 8 vCPUs, 24: the most any type of the pool needs.
    assert (peak.peak_slots, peak.instance_type, peak.nodes, peak.vcpus, peak.max_vcpus) == (
        9,
        "g4dn.xlarge",
        3,
        12,
        24,
    )
    (week,) = resolved.weeks
    # Around the clock: 3 nodes x 168 h. Timetable: 1 warm node all week + 2 more for 2 x (5 min + 2 h).
    assert week.around_the_clock_node_hours == 3 * 168
    assert week.timetable_node_hours == pytest.approx(168 + 2 * 2 * (125 / 60))
    assert week.saved_node_hours == pytest.approx(504 - 168 - 500 / 60)
    (lifetime,) = resolved.node_lifetimes
    assert lifetime.longest == "4h15m" and "2h5m30s" in lifetime.why


def test_synth_summary_prints_the_timetable(staging_plan: Plan) -> None:
    from components.settings.checks.fit_placement import group_fits
    from offline.cost import stack_forecast
    from offline.summary import render_summary

    settings = settings_for("staging")
    text = render_summary(
        settings, staging_plan, "staging", PROJECT_DIR / "build", stack_forecast(settings), group_fits(settings)
    )
    assert "labs.0.sessions.0" in text and "timetable 176.3 h, around the clock 504.0 h, saved 327.7 h" in text
    assert "g4-nodepool           4h15m" in text


def test_cronjobs_wait_for_their_buffer_account_and_role(staging_plan: Plan) -> None:
    urns = {(r["type"].rsplit(":", 1)[-1], r["name"]): r["urn"] for r in staging_plan.resources}
    buffer = urns[("CapacityBuffer", "karpenter-g4-nodepool-warm-buffer")]
    prefix = f"lab-timetable-{TIMETABLE_NAMESPACE}-"
    namespace = urns[("Namespace", "lab-timetable-namespace")]
    account = urns[("ServiceAccount", f"{prefix}g4-nodepool-timetable")]
    role = urns[("Role", "lab-timetable-kube-system-g4-nodepool-timetable")]
    binding = urns[("RoleBinding", "lab-timetable-kube-system-g4-nodepool-timetable")]
    jobs = [r for r in staging_plan.resources if r["type"].endswith(":CronJob")]
    assert len(jobs) == 2
    for job in jobs:
        assert {buffer, namespace, account, role, binding} <= set(job["dependencies"])
