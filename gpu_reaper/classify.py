"""Per pod and window: busy, held-idle, never-used or unknown; then none, warn or stop. Pure functions.

What the exporter writes (NVIDIA/dcgm-exporter @ 4.5.3-4.8.2, PR #594): with `KUBERNETES_VIRTUAL_GPUS`, the
pod mapper (internal/pkg/transformation/kubernetes.go `createPerProcessMetrics`) turns the two per-process
fields (`DCGM_FI_DEV_GPU_UTIL`, `DCGM_FI_DEV_FB_USED`: const.go `metricGPUUtil` / `metricFBUsed`) into one
series per pod on the GPU, labelled `pod`, `namespace`, `container` and, always, `pod_uid`; the value is the sum
over the pod's processes of NVML's per-process SM utilisation (nvmlprovider/provider.go
`GetDeviceProcessUtilization`: `nvmlDeviceGetProcessUtilization`, `SmUtil` in %) and framebuffer
(`GetDeviceProcessMemory`: compute processes' `UsedGpuMemory`, in MiB). A pod on the GPU with no process gets
`0` (`buildIdlePodValues`), and the device's own series (no `pod` label) is kept beside them. So:

- a pod series without `pod_uid` is a copy of the device's value (the per-process path is off): unknown;
- NVML answering `ERROR_NOT_SUPPORTED` for process utilisation gives no SM samples at all (`return nil, nil`),
  which reads as `0` for every pod: a GPU whose device utilisation is above the threshold while no pod on it
  shows any SM use is blind in that scrape, and its pods are unknown for the window. Unknown is never reclaimed.

Samples are taken every few seconds by NVML but scraped every 30 s, so a short burst between scrapes can be
missed: a window's verdict is the maximum over its scrapes, and a pod is warned only after two consecutive idle
windows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from gpu_reaper.promtext import Sample

SM_FIELD = "DCGM_FI_DEV_GPU_UTIL"
FB_FIELD = "DCGM_FI_DEV_FB_USED"
FIELDS = frozenset({SM_FIELD, FB_FIELD})

BUSY, HELD_IDLE, NEVER_USED, UNKNOWN = "busy", "held-idle", "never-used", "unknown"
STATES = (BUSY, HELD_IDLE, NEVER_USED, UNKNOWN)
NONE, WARN, STOP = "none", "warn", "stop"
IDLE_WINDOWS_BEFORE_WARNING = 2


@dataclass(frozen=True)
class Thresholds:
    threshold_percent: float = 5
    idle_minutes: int = 30
    grace_minutes: int = 10
    never_used_minutes: int = 45

    @property
    def window_seconds(self) -> float:
        """Two windows make `idle_minutes`: a pod idle that long is warned."""
        return self.idle_minutes * 60 / IDLE_WINDOWS_BEFORE_WARNING


@dataclass(frozen=True)
class Scrape:
    """One exporter's answer (one node) at `at` (unix seconds)."""

    at: float
    samples: tuple[Sample, ...]


@dataclass
class PodWindow:
    """What one window's scrapes say about one pod."""

    namespace: str
    pod: str
    node: str
    max_sm: float = 0.0
    max_fb: float = 0.0
    per_process: bool = True
    blind: bool = False


@dataclass(frozen=True)
class Memory:
    """What the reaper remembers of a pod between windows."""

    idle_windows: int = 0
    warned_at: float | None = None


@dataclass(frozen=True)
class Verdict:
    state: str
    action: str
    memory: Memory = field(default_factory=Memory)


def _gpu(sample: Sample) -> tuple[str, str]:
    labels = sample.labels
    return labels.get("Hostname", ""), labels.get("UUID") or labels.get("gpu", "")


def blind_gpus(samples: Iterable[Sample], threshold: float) -> set[tuple[str, str]]:
    """GPUs (node, UUID) busy as a device while no pod on them shows SM use: the per-process signal is missing."""
    device: dict[tuple[str, str], float] = {}
    pods: dict[tuple[str, str], float] = {}
    for sample in samples:
        if sample.name != SM_FIELD:
            continue
        key = _gpu(sample)
        if "pod" in sample.labels and sample.labels.get("pod"):
            pods[key] = max(pods.get(key, 0.0), sample.value if "pod_uid" in sample.labels else 0.0)
        else:
            device[key] = max(device.get(key, 0.0), sample.value)
    return {key for key, value in device.items() if value > threshold and pods.get(key, 0.0) == 0.0}


def window_readings(scrapes: Iterable[Scrape], threshold: float) -> dict[tuple[str, str], PodWindow]:
    """Per (namespace, pod): the maximum SM and framebuffer over the window's scrapes, and whether to trust them."""
    readings: dict[tuple[str, str], PodWindow] = {}
    for scrape in scrapes:
        blind = blind_gpus(scrape.samples, threshold)
        for sample in scrape.samples:
            labels = sample.labels
            if sample.name not in FIELDS or not labels.get("pod"):
                continue
            key = (labels.get("namespace", ""), labels["pod"])
            reading = readings.setdefault(key, PodWindow(key[0], key[1], labels.get("Hostname", "")))
            reading.per_process = reading.per_process and "pod_uid" in labels
            reading.blind = reading.blind or _gpu(sample) in blind
            if sample.name == SM_FIELD:
                reading.max_sm = max(reading.max_sm, sample.value)
            else:
                reading.max_fb = max(reading.max_fb, sample.value)
    return readings


def pod_state(reading: PodWindow, threshold: float, kernel_busy: bool = False) -> str:
    """The window's state of one pod; a kernel executing (the second signal) is busy whatever the GPU shows."""
    if kernel_busy:
        return BUSY
    if reading.blind or not reading.per_process:
        return UNKNOWN
    if reading.max_sm > threshold:
        return BUSY
    if reading.max_fb > 0:
        return HELD_IDLE
    return NEVER_USED


def decide(
    state: str, memory: Memory, now: float, started_at: float | None, exempt: bool, limits: Thresholds
) -> Verdict:
    """The action for a pod in `state` at the end of a window, given what was remembered of it."""
    if exempt or state in (BUSY, UNKNOWN):
        return Verdict(state, NONE)
    if state == NEVER_USED and (started_at is None or now - started_at < limits.never_used_minutes * 60):
        return Verdict(state, NONE)
    remembered = replace(memory, idle_windows=memory.idle_windows + 1)
    if remembered.warned_at is None:
        if remembered.idle_windows >= IDLE_WINDOWS_BEFORE_WARNING:
            return Verdict(state, WARN, replace(remembered, warned_at=now))
        return Verdict(state, NONE, remembered)
    if now - remembered.warned_at >= limits.grace_minutes * 60:
        return Verdict(state, STOP, remembered)
    return Verdict(state, NONE, remembered)


def kernels_busy(kernels: Iterable[Mapping[str, object]]) -> bool:
    """Jupyter Server's `GET /api/kernels`: any kernel whose `execution_state` is `busy`."""
    return any(kernel.get("execution_state") == "busy" for kernel in kernels)


def nodes_without_signal(scrapes: Iterable[Scrape], threshold: float) -> dict[str, int]:
    """Per node: how many of its GPUs were busy with no per-process sample in some scrape (the alarm's metric)."""
    blind: dict[str, set[str]] = {}
    for scrape in scrapes:
        for node, uuid in blind_gpus(scrape.samples, threshold):
            blind.setdefault(node, set()).add(uuid)
    return {node: len(uuids) for node, uuids in sorted(blind.items())}
