"""The loop the hub runs as a managed service: scrape every exporter pod, judge each window, act through the hub.

Settings come from one JSON file the chart ships beside this package (`hub.extraFiles`), written by the
platform's renderer (components/renderers/hub/hub_gpu_idle.py): the single source of the thresholds.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from gpu_reaper import classify, cloudwatch
from gpu_reaper.hubapi import Hub
from gpu_reaper.kube import Kube, scrape
from gpu_reaper.promtext import parse
from gpu_reaper.replay import Decision, Judge
from gpu_reaper.users import Learner, learners_by_pod

log = logging.getLogger("gpu-reaper")


@dataclass
class Reaper:
    config: dict[str, Any]
    hub: Hub
    kube: Kube | None
    judge: Judge
    scrapes: list[classify.Scrape] = field(default_factory=list)
    warned: set[str] = field(default_factory=set)
    reclaimed_hours: float = 0.0
    ca: str | None = None

    def collect(self, now: float) -> None:
        """One scrape of every exporter pod; an exporter that does not answer leaves its pods unjudged."""
        exporter = self.config["exporter"]
        assert self.kube is not None
        if self.ca is None:  # read once per window: the add-on renews its certificate rarely
            self.ca = self.kube.ca_bundle(exporter["namespace"], exporter["caSecret"])
        ca = self.ca
        for address, node in self.kube.exporter_pods(exporter["namespace"], exporter["selector"]):
            try:
                text = scrape(address, exporter["port"], ca, exporter["serverName"])
            except OSError as error:
                log.warning("exporter on %s did not answer: %s", node, error)
                continue
            self.scrapes.append(classify.Scrape(now, tuple(parse(text, classify.FIELDS))))

    def window(self, now: float) -> list[Decision]:
        """Judge the window's scrapes and act on each decision."""
        learners = learners_by_pod(self.hub.users())
        running = {learner.name for learner in learners.values() if learner.running}
        busy = {}
        for user in sorted(running):
            kernels = self.hub.kernels(user)
            busy[user] = kernels is not None and classify.kernels_busy(kernels)
        decisions = self.judge.judge_window(self.scrapes, now, learners, busy)
        blind = classify.nodes_without_signal(self.scrapes, self.judge.limits.threshold_percent)
        self.scrapes = []
        self.ca = None
        for decision in decisions:
            try:
                self.act(decision, learners.get(decision.pod))
            except OSError as error:
                log.warning("%s for %s not carried out: %s", decision.action, decision.user, error)
                if decision.action == classify.WARN:  # no notice written: the grace has not started
                    key = (decision.namespace, decision.pod)
                    self.judge.memory[key] = replace(self.judge.memory[key], warned_at=None)
        self.report(decisions, blind)
        return decisions

    def act(self, decision: Decision, learner: Learner | None) -> None:
        user = decision.user
        if user is None or learner is None or not learner.running:
            return
        print(decision.line(), flush=True)
        if decision.action == classify.WARN:
            self.hub.warn(user, decision.state, self.judge.limits.grace_minutes)
            self.warned.add(user)
        elif decision.action == classify.STOP:
            self.hub.stop(user)
            self.warned.discard(user)
            self.reclaimed_hours += reclaimed_hours(learner, decision.at, self.config.get("maxHours", 0))
        elif user in self.warned and self.judge.memory.get((decision.namespace, decision.pod)) == classify.Memory():
            self.hub.withdraw(user)
            self.warned.discard(user)
        if decision.action != classify.NONE and self.kube is not None:
            message = f"GPU slot {decision.state}: {decision.action} (user {user})"
            self.kube.event(decision.namespace, decision.pod, f"GpuIdle{decision.action.title()}", message, True)

    def report(self, decisions: list[Decision], blind: dict[str, int]) -> None:
        """Log the window; with `metrics` configured, send its numbers to CloudWatch (docs/jupyterhub.md)."""
        stops = sum(1 for decision in decisions if decision.action == classify.STOP)
        for node, gpus in blind.items():
            log.warning("node %s: %d busy GPU(s) without per-process samples; its pods are unknown", node, gpus)
        log.info("window: %d pods judged, %d stopped, %d nodes without per-process samples",
                 len(decisions), stops, len(blind))  # fmt: skip
        metrics = self.config.get("metrics")
        if metrics:
            data = window_metrics(metrics["clusterName"], metrics["lab"], self.reclaimed_hours, len(blind))
            try:
                cloudwatch.put_metric_data(metrics["region"], metrics["namespace"], data)
            except OSError as error:
                log.warning("metrics not sent: %s", error)
        self.reclaimed_hours = 0.0


def reclaimed_hours(learner: Learner, now: float, max_hours: float) -> float:
    """The slot-hours a stop gives back: what was left until `maxHours` would have stopped the server anyway."""
    if learner.started_at is None or not max_hours:
        return 0.0
    return max(0.0, learner.started_at + max_hours * 3600 - now) / 3600


def window_metrics(cluster: str, lab: str, reclaimed: float, blind_nodes: int) -> list[cloudwatch.Datum]:
    """Each number per lab and once per cluster (the alarm watches the cluster-wide one)."""
    data = []
    for dimensions in ({"ClusterName": cluster, "Lab": lab}, {"ClusterName": cluster}):
        data.append(cloudwatch.Datum("ReclaimedSlotHours", reclaimed, "Count", dimensions))
        data.append(cloudwatch.Datum("NodesWithoutProcessSamples", float(blind_nodes), "Count", dimensions))
    return data


def reaper_from_config(path: Path) -> Reaper:
    config = json.loads(path.read_text())
    limits = classify.Thresholds(
        config["thresholdPercent"], config["idleMinutes"], config["graceMinutes"], config["neverUsedMinutes"]
    )
    # The hub's API on localhost when the config names it: JupyterHub hands a managed service `hub_connect_url`
    # (the cross-namespace Service), which the hub pod's own policies do not open to itself.
    api_url = config.get("hubApiUrl") or os.environ["JUPYTERHUB_API_URL"]
    hub = Hub(api_url, os.environ["JUPYTERHUB_API_TOKEN"], config["serversUrl"])
    kube = Kube() if config.get("exporter") else None
    return Reaper(
        config,
        hub,
        kube,
        Judge(
            limits,
            config["exemptGroup"],
            config.get("namespace"),
            frozenset(config.get("unjudgedProfiles", ())),
        ),
    )


def run(path: Path) -> None:
    """Scrape every `scrapeSeconds`; judge at the end of each window. Never returns."""
    reaper = reaper_from_config(path)
    window_end = time.time() + reaper.judge.limits.window_seconds
    while True:
        now = time.time()
        try:
            reaper.collect(now)
            if now >= window_end:
                reaper.window(now)
                window_end = now + reaper.judge.limits.window_seconds
        except OSError as error:
            log.warning("skipped a round: %s", error)
        time.sleep(reaper.config["scrapeSeconds"])
