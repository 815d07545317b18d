"""The GPU idle reaper end to end against a real JupyterHub 5.5.0 process on 127.0.0.1 (the z2jh 4.4.0 hub's
version): learners start servers through the REST API, the reaper reads recorded-format scrapes and the servers'
kernels through the hub's proxy with its own service token and role, warns the idle learner, then stops that
server through the hub; the busy learner, the kernel-busy learner and the exempt learner keep theirs, as the
hub's own records show. Stand-ins (proxy, spawner, servers): tests/support/reaper_hub_stand_ins.py."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.renderers.hub.hub_gpu_idle import SCOPES, SERVICE
from gpu_reaper import classify
from gpu_reaper.hubapi import Hub
from gpu_reaper.promtext import Sample
from gpu_reaper.replay import Judge
from gpu_reaper.service import Reaper
from tests.conftest import PROJECT_DIR

LEARNERS = ("alice", "bob", "ivan", "kim")
LIMITS = classify.Thresholds(threshold_percent=5, idle_minutes=10, grace_minutes=5, never_used_minutes=10)
DEADLINE_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _call(url: str, token: str, method: str = "GET") -> Any:
    request = urllib.request.Request(url, method=method, headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read()
    return json.loads(text) if text else None


def _config(tmp: Path, hub_port: int, reaper_token: str, admin_token: str) -> str:
    return f"""
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {hub_port}
c.JupyterHub.proxy_class = "tests.support.reaper_hub_stand_ins.RoutingProxy"
c.JupyterHub.spawner_class = "tests.support.reaper_hub_stand_ins.StandInSpawner"
c.Spawner.cmd = [{sys.executable!r}, "-m", "tests.support.reaper_hub_stand_ins"]
c.Spawner.start_timeout = 30
c.Spawner.http_timeout = 30
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.Authenticator.admin_users = {{"tina"}}
c.JupyterHub.db_url = "sqlite:///{tmp}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{tmp}/cookie_secret"
c.JupyterHub.pid_file = "{tmp}/hub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.services = [
    {{"name": "{SERVICE}", "api_token": "{reaper_token}"}},
    {{"name": "test-admin", "api_token": "{admin_token}"}},
]
c.JupyterHub.load_roles = [
    {{"name": "{SERVICE}", "scopes": {list(SCOPES)!r}, "services": ["{SERVICE}"]}},
    {{"name": "test-admin", "scopes": ["admin:users", "admin:servers"], "services": ["test-admin"]}},
]
c.JupyterHub.load_groups = {{"gpu-idle-exempt": {{"users": ["ivan"]}}}}
"""


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[dict[str, Any]]:
    hub_port, proxy_port = _free_port(), _free_port()
    reaper_token, admin_token = secrets.token_hex(16), secrets.token_hex(16)
    (tmp_path / "jupyterhub_config.py").write_text(_config(tmp_path, hub_port, reaper_token, admin_token))
    (tmp_path / "kim.kernel-busy").touch()  # a 2-hour training cell with the tab closed
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR), "STAND_IN_STATE_DIR": str(tmp_path),
           "STAND_IN_PROXY_PORT": str(proxy_port)}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterhub", "-f", str(tmp_path / "jupyterhub_config.py"), "--port", str(proxy_port)],
        cwd=tmp_path, env=env, stdout=(tmp_path / "hub.log").open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    api = f"http://127.0.0.1:{hub_port}/hub/api"
    try:
        _wait(lambda: _call(f"{api}/", admin_token) is not None, process, tmp_path)
        yield {"api": api, "proxy": f"http://127.0.0.1:{proxy_port}", "reaper": reaper_token,
               "admin": admin_token, "dir": tmp_path, "process": process}  # fmt: skip
    finally:
        process.send_signal(signal.SIGTERM)  # the hub stops every server it spawned (cleanup_servers)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


def _wait(ready: Any, process: subprocess.Popen[bytes], tmp: Path) -> None:
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        assert process.poll() is None, (tmp / "hub.log").read_text()[-3000:]
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError((tmp / "hub.log").read_text()[-3000:])


def _scrape(at: float, pods: dict[str, tuple[float, float]]) -> classify.Scrape:
    gpu = {"gpu": "0", "UUID": "GPU-t4", "modelName": "Tesla T4", "Hostname": "node-a"}
    samples = [Sample(classify.SM_FIELD, dict(gpu), max(v[0] for v in pods.values()))]
    for user, (sm, fb) in pods.items():
        labels = {**gpu, "container": "notebook", "namespace": "lab", "pod": f"jupyter-{user}", "pod_uid": user}
        samples += [Sample(classify.SM_FIELD, labels, sm), Sample(classify.FB_FIELD, labels, fb)]
    return classify.Scrape(at, tuple(samples))


def _running(hub: dict[str, Any]) -> dict[str, bool]:
    users = _call(f"{hub['api']}/users", hub["admin"])
    return {u["name"]: bool(u["servers"].get("", {}).get("ready")) for u in users if u["name"] in LEARNERS}


def test_the_reaper_warns_then_stops_the_idle_learner_through_the_real_hub(hub: dict[str, Any]) -> None:
    existing = {u["name"] for u in _call(f"{hub['api']}/users", hub["admin"])}  # load_groups and admin_users
    for user in sorted(set(LEARNERS) - existing):
        _call(f"{hub['api']}/users/{user}", hub["admin"], "POST")
    for user in LEARNERS:
        _call(f"{hub['api']}/users/{user}/server", hub["admin"], "POST")
    _wait(lambda: all(_running(hub).values()) and len(_running(hub)) == 4, hub["process"], hub["dir"])

    config = {"thresholdPercent": 5, "exemptGroup": "gpu-idle-exempt", "serversUrl": hub["proxy"]}
    client = Hub(hub["api"], hub["reaper"], hub["proxy"], page_size=2)  # pages of 2: the paging is exercised
    assert sorted(u["name"] for u in client.users()) == sorted(LEARNERS)  # tina (admin) has no server: not listed
    reaper = Reaper(config, client, None, Judge(LIMITS, "gpu-idle-exempt", "lab"))
    usage = {"alice": (70.0, 2000.0), "bob": (0.0, 1500.0), "ivan": (0.0, 600.0), "kim": (0.0, 1100.0)}
    start = time.time()
    actions = []
    for window in (1, 2, 3):
        now = start + window * LIMITS.window_seconds
        reaper.scrapes = [_scrape(now - 60, usage), _scrape(now - 30, usage)]
        decisions = reaper.window(now)
        actions.append({d.user: (d.state, d.action) for d in decisions})
        if window == 2:
            notice = (hub["dir"] / "bob.notice.md").read_text()
            assert "will be stopped in 5 minutes" in notice
    assert [a["bob"] for a in actions] == [("held-idle", "none"), ("held-idle", "warn"), ("held-idle", "stop")]
    assert {a["kim"] for a in actions} == {("busy", "none")}
    assert {a["alice"] for a in actions} == {("busy", "none")}
    assert {a["ivan"] for a in actions} == {("held-idle", "none")}

    # The hub's own records: bob's server is gone (the user and so the home volume stay), the others run.
    _wait(lambda: _running(hub) == {"alice": True, "bob": False, "ivan": True, "kim": True},
          hub["process"], hub["dir"])  # fmt: skip
    bob = _call(f"{hub['api']}/users/bob", hub["admin"])
    assert bob["name"] == "bob" and bob["servers"] == {}


def test_the_reapers_role_cannot_do_more_than_it_needs(hub: dict[str, Any]) -> None:
    model = _call(f"{hub['api']}/user", hub["reaper"])
    assert model["kind"] == "service" and model["name"] == SERVICE
    with pytest.raises(urllib.error.HTTPError) as refused:
        _call(f"{hub['api']}/users/someone", hub["reaper"], "POST")  # creating users needs admin:users
    assert refused.value.code == 403
