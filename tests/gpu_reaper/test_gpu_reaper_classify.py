"""The GPU idle reaper's classifier (gpu_reaper.classify): synthetic series in the exporter's per-process format."""

from __future__ import annotations

from gpu_reaper import classify
from gpu_reaper.classify import BUSY, HELD_IDLE, NEVER_USED, NONE, STOP, UNKNOWN, WARN, Memory, Scrape, Thresholds
from gpu_reaper.promtext import Sample, parse

LIMITS = Thresholds(threshold_percent=5, idle_minutes=20, grace_minutes=10, never_used_minutes=30)
GPU = {"gpu": "0", "UUID": "GPU-t4-a", "device": "nvidia0", "modelName": "Tesla T4", "Hostname": "node-a"}


def device(name: str, value: float, gpu: dict[str, str] = GPU) -> Sample:
    return Sample(name, dict(gpu), value)


def per_pod(name: str, pod: str, value: float, gpu: dict[str, str] = GPU, uid: bool = True) -> Sample:
    labels = {**gpu, "container": "notebook", "namespace": "lab", "pod": pod}
    if uid:
        labels["pod_uid"] = f"uid-{pod}"
    return Sample(name, labels, value)


def scrape(at: float, pods: dict[str, tuple[float, float]], device_sm: float | None = None) -> Scrape:
    """One scrape of a time-sliced GPU: per pod (SM %, framebuffer MiB), plus the device's own series."""
    sm = max([value[0] for value in pods.values()] + [0]) if device_sm is None else device_sm
    samples = [device(classify.SM_FIELD, sm), device(classify.FB_FIELD, sum(v[1] for v in pods.values()))]
    for pod, (pod_sm, pod_fb) in pods.items():
        samples += [per_pod(classify.SM_FIELD, pod, pod_sm), per_pod(classify.FB_FIELD, pod, pod_fb)]
    return Scrape(at, tuple(samples))


def states(scrapes: list[Scrape], kernel_busy: frozenset[str] = frozenset()) -> dict[str, str]:
    readings = classify.window_readings(scrapes, LIMITS.threshold_percent)
    return {
        pod: classify.pod_state(r, LIMITS.threshold_percent, pod in kernel_busy) for (_, pod), r in readings.items()
    }


def test_three_learners_on_one_time_sliced_t4_one_busy_two_holding_memory() -> None:
    window = [scrape(t, {"alice": (71, 2300), "bob": (0, 1500), "ben": (0, 900)}) for t in range(0, 600, 30)]
    assert states(window) == {"alice": BUSY, "bob": HELD_IDLE, "ben": HELD_IDLE}


def test_device_copies_would_call_every_learner_busy_the_per_process_series_do_not() -> None:
    """gpu-pruner's reading (the device's value copied to each pod, no pod_uid) is unknown here, never idle or busy."""
    copies = Scrape(0, tuple(per_pod(classify.SM_FIELD, pod, 71, uid=False) for pod in ("alice", "bob")))
    assert states([copies]) == {"alice": UNKNOWN, "bob": UNKNOWN}


def test_a_learner_who_never_ran_cuda_is_never_used_and_waits_for_never_used_minutes() -> None:
    window = [scrape(t, {"dave": (0, 0)}) for t in range(0, 600, 30)]
    assert states(window) == {"dave": NEVER_USED}
    started = 0.0
    early = classify.decide(NEVER_USED, Memory(), 29 * 60, started, False, LIMITS)
    assert (early.action, early.memory) == (NONE, Memory())
    later = classify.decide(NEVER_USED, Memory(), 30 * 60, started, False, LIMITS)
    assert (later.action, later.memory.idle_windows) == (NONE, 1)


def test_a_burst_between_samples_counts_when_one_scrape_of_the_window_caught_it() -> None:
    window = [scrape(t, {"carol": (35 if t == 270 else 0, 800)}) for t in range(0, 600, 30)]
    assert states(window) == {"carol": BUSY}
    # ... and one idle window after a burst does not warn: two consecutive idle windows do.
    first = classify.decide(HELD_IDLE, Memory(), 600, 0, False, LIMITS)
    assert first.action == NONE
    second = classify.decide(HELD_IDLE, first.memory, 1200, 0, False, LIMITS)
    assert (second.action, second.memory.warned_at) == (WARN, 1200)
    broken = classify.decide(BUSY, second.memory, 1800, 0, False, LIMITS)
    assert (broken.action, broken.memory) == (NONE, Memory())


def test_an_unknown_node_busy_with_no_per_process_samples_is_never_reclaimed() -> None:
    window = [scrape(t, {"erin": (0, 1000), "frank": (0, 1200)}, device_sm=91) for t in range(0, 600, 30)]
    assert states(window) == {"erin": UNKNOWN, "frank": UNKNOWN}
    assert classify.nodes_without_signal(window, LIMITS.threshold_percent) == {"node-a": 1}
    memory = Memory(idle_windows=5, warned_at=0)
    assert classify.decide(UNKNOWN, memory, 10_000, 0, False, LIMITS).action == NONE


def test_a_quiet_device_with_idle_pods_is_not_an_unknown_node() -> None:
    window = [scrape(t, {"bob": (0, 1500)}) for t in range(0, 600, 30)]
    assert classify.nodes_without_signal(window, LIMITS.threshold_percent) == {}


def test_a_busy_kernel_with_the_tab_closed_is_busy() -> None:
    window = [scrape(t, {"kim": (0, 1100)}) for t in range(0, 600, 30)]
    assert states(window) == {"kim": HELD_IDLE}
    assert states(window, kernel_busy=frozenset({"kim"})) == {"kim": BUSY}
    assert classify.kernels_busy([{"execution_state": "idle"}, {"execution_state": "busy"}])
    assert not classify.kernels_busy([{"execution_state": "idle"}])


def test_warned_pods_stop_after_the_grace_period_and_exempt_pods_never() -> None:
    warned = Memory(idle_windows=2, warned_at=1200)
    assert classify.decide(HELD_IDLE, warned, 1200 + 9 * 60, 0, False, LIMITS).action == NONE
    assert classify.decide(HELD_IDLE, warned, 1200 + 10 * 60, 0, False, LIMITS).action == STOP
    assert classify.decide(HELD_IDLE, warned, 1200 + 10 * 60, 0, True, LIMITS).action == NONE


def test_the_text_format_reads_the_exporters_lines() -> None:
    text = (
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-x",pci_bus_id="00000000:00:1E.0",device="nvidia0",'
        'modelName="Tesla T4",Hostname="n",container="c",namespace="lab",pod="jupyter-a",pod_uid="u"} 37\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-x"} 27.5\n'
    )
    (sample,) = parse(text, classify.FIELDS)
    assert (sample.value, sample.labels["pod"], sample.labels["pod_uid"], sample.labels["modelName"]) == (
        37.0,
        "jupyter-a",
        "u",
        "Tesla T4",
    )


def test_a_warning_the_hub_could_not_deliver_starts_no_grace() -> None:
    """The notice is the learner's only sign: when writing it fails, the reaper forgets the warning, so a later
    window warns again instead of stopping a server whose owner was never told."""
    from gpu_reaper import service
    from gpu_reaper.promtext import parse
    from gpu_reaper.replay import Judge

    class UnreachableHub:
        def __init__(self) -> None:
            self.stops: list[str] = []

        def users(self) -> list[dict[str, object]]:
            return [{"name": "bob", "servers": {"": {"started": "2026-12-03T10:00:00Z", "ready": True}}}]

        def kernels(self, user: str) -> list[dict[str, object]]:
            return []

        def warn(self, user: str, state: str, grace_minutes: int) -> None:
            raise OSError("connection refused")

        def stop(self, user: str) -> None:
            self.stops.append(user)

        def withdraw(self, user: str) -> None:
            pass

    labels = 'gpu="0",UUID="GPU-1",Hostname="n1",namespace="lab",pod="jupyter-bob",container="notebook",pod_uid="u1"'
    text = f"DCGM_FI_DEV_GPU_UTIL{{{labels}}} 0\nDCGM_FI_DEV_FB_USED{{{labels}}} 2048\n"
    hub = UnreachableHub()
    judge = Judge(classify.Thresholds(5, 1, 1, 1), "exempt", "lab")
    reaper = service.Reaper({}, hub, None, judge)  # type: ignore[arg-type]
    actions = []
    for window in range(6):
        now = 1_800_000_000.0 + window * judge.limits.window_seconds
        reaper.scrapes = [classify.Scrape(now, tuple(parse(text, classify.FIELDS)))]
        actions += [decision.action for decision in reaper.window(now)]
    assert classify.WARN in actions and classify.STOP not in actions and hub.stops == []
    assert judge.memory[("lab", "jupyter-bob")].warned_at is None
