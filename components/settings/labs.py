"""`labs` and `demo`: learning labs (namespace, quota, members, weekly sessions, hub) and the demo workload."""

from __future__ import annotations

import re
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from components.facts import quantity, timetable
from components.facts.constants import PLATFORM_SYSTEM_NAMESPACES, TIMETABLE_NAMESPACE
from components.settings.fields import DnsLabel, PinnedImage, PrincipalArn, SettingsModel
from components.settings.hub import HubSettings

# Namespaces a lab or the demo may never take: the cluster's own, and where the platform's agents run
# (the GPU admission guard exempts those, and their Pod Security level is not `restricted`).
RESERVED_NAMESPACES = tuple(
    dict.fromkeys(
        ("default", "kube-system", "kube-public", "kube-node-lease", *PLATFORM_SYSTEM_NAMESPACES, TIMETABLE_NAMESPACE)
    )
)


def _workload_namespace(value: str) -> str:
    if value in RESERVED_NAMESPACES or value.startswith("kube-"):
        raise ValueError(
            f"'{value}' is a system namespace; use a namespace of its own (not {', '.join(RESERVED_NAMESPACES)}, "
            "nor any 'kube-' name)"
        )
    return value


_workload_namespace.__doc__ = f"Not a system namespace ({', '.join(RESERVED_NAMESPACES)}, nor any `kube-` name)."


class DemoSettings(SettingsModel):
    enabled: bool = False
    """The learning-lab demo Deployment on shared GPUs (`up` does not wait for its pods)."""
    namespace: Annotated[DnsLabel, AfterValidator(_workload_namespace)] = "learning-lab"
    """Its namespace: one of the labs when labs are set, else its own with a deny-all NetworkPolicy."""
    replicas: Annotated[int, Field(ge=1, le=50)] = 3
    """Demo pods, each requesting nvidia.com/gpu: 1."""
    image: PinnedImage = "docker.io/tensorflow/tensorflow:2.12.0-gpu"
    """The demo's container image."""


def _quantity(value: str) -> str:
    """A Kubernetes quantity (components/facts/quantity.py: decimal and binary suffixes, e.g. `16`, `500m`, `64Gi`, `64G`)."""
    quantity.parse(value)  # ValueError naming the grammar (decimal suffixes like 64G included)
    return value


def _session_schedule(value: str) -> str:
    timetable.session_starts(value)
    return value


def _session_duration(value: str) -> str:
    seconds = timetable.parse_seconds(value) if re.fullmatch(r"([0-9]+h)?([0-9]+m)?", value) and value else None
    if seconds is None or seconds % 60 or not 0 < seconds <= timetable.MAX_SESSION_SECONDS:
        raise ValueError(
            f"must be hours and/or minutes like 2h, 90m or 1h30m, at most "
            f"{timetable.MAX_SESSION_SECONDS // 3600}h (got {value!r})"
        )
    return value


class LabSession(SettingsModel):
    """One weekly class of a lab: when it starts (in its own time zone), how long it lasts, who comes."""

    schedule: Annotated[str, AfterValidator(_session_schedule)]
    """Weekly start in `timezone`: 'minute hour * * days' with one minute and one hour, e.g. '0 17 * * tue,thu'."""
    timezone: Annotated[str, AfterValidator(timetable.check_timezone)]
    """IANA time zone of `schedule`, e.g. America/Los_Angeles; the CronJobs' `spec.timeZone`."""
    duration: Annotated[str, AfterValidator(_session_duration)]
    """How long the class lasts: hours and/or minutes (2h, 90m, 1h30m), at most 12h."""
    learners: Annotated[int, Field(ge=1, le=10000)]
    """Learners attending, each holding one shared GPU slot; at most the lab's gpuSlots."""
    node_pool: DnsLabel | None = None
    """The karpenter.nodePools[].name whose warm headroom the session raises; optional with a single pool."""

    @property
    def duration_minutes(self) -> int:
        seconds = timetable.parse_seconds(self.duration)
        assert seconds is not None
        return seconds // 60


class LabSettings(SettingsModel):
    """One learning lab: its namespace (= name), the shared GPU slots it may hold, its people."""

    name: Annotated[DnsLabel, AfterValidator(_workload_namespace)]
    """The lab's name and namespace; unique. With a hub, at most 59 characters and no other lab's `<name>-hub` (the
    hub's namespace)."""
    gpu_slots: Annotated[int, Field(ge=1, le=10000)]
    """Shared GPU slots the lab may hold at once: its ResourceQuota's requests.nvidia.com/gpu."""
    members: Annotated[list[PrincipalArn], Field(max_length=100)] = []
    """Who gets the lab's group (the `lab-member` Role in the lab's namespace); each once, not a cluster admin
    nor the deployer."""
    # ResourceQuota on requests.cpu and requests.memory (requests only: lab_manifests.CONTAINER_DEFAULT_REQUESTS).
    cpu: Annotated[str, AfterValidator(_quantity)] = "16"
    """ResourceQuota requests.cpu."""
    memory: Annotated[str, AfterValidator(_quantity)] = "64Gi"
    """ResourceQuota requests.memory."""
    sessions: Annotated[list[LabSession], Field(max_length=20)] = []
    """The lab's weekly timetable (docs/timetable.md): warm GPUs before each session, no disruption during it."""
    hub: HubSettings | None = None
    """The lab's JupyterHub: learners log in and pick a shared GPU slot (docs/jupyterhub.md); off unless present."""

    @model_validator(mode="after")
    def _members_once(self) -> Self:
        repeated = sorted({arn for arn in self.members if self.members.count(arn) > 1})
        if repeated:
            raise ValueError(f"members: each principal once: {repeated}")
        for index, session in enumerate(self.sessions):
            if session.learners > self.gpu_slots:
                raise ValueError(
                    f"sessions[{index}].learners: {session.learners} exceeds the lab's gpuSlots {self.gpu_slots} "
                    "(each learner holds one shared GPU slot of the lab's quota)"
                )
        return self
