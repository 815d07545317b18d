"""`labs[].hub` settings: one clear key-path error per mistake, secrets only where a hub keeps them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from components.settings import SettingsError, load_settings
from components.settings.loading import may_be_secret
from offline.config_files import read_stack_config
from tests.conftest import PROJECT_DIR

HUB = "gpu-platform:labs[0].hub"
STAGING = read_stack_config(PROJECT_DIR, "staging")


def with_hub(secret_paths: tuple[str, ...] = STAGING.secret_paths, **changes: Any) -> dict[str, str]:
    """Staging's config with keys of its first lab's hub changed (None removes a key)."""
    labs = json.loads(STAGING.values["gpu-platform:labs"])
    hub = {**labs[0]["hub"], **changes}
    labs[0]["hub"] = {k: v for k, v in hub.items() if v is not None}
    return {**STAGING.values, "gpu-platform:labs": json.dumps(labs)}


def problems(config: dict[str, str], secrets: tuple[str, ...] = STAGING.secret_paths) -> list[tuple[str, str]]:
    with pytest.raises(SettingsError) as caught:
        load_settings(config, secrets)
    return caught.value.problems


def test_staging_hub_loads_with_its_secrets() -> None:
    settings = load_settings(STAGING.values, STAGING.secret_paths)
    hub = settings.labs[0].hub
    assert hub is not None and hub.idle_minutes == 30 and hub.max_hours == 2
    assert set(STAGING.secret_paths) == {f"{HUB}.auth.password", f"{HUB}.auth.adminPassword"}


@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"certificateArn": None}, f"{HUB}.certificateArn", "internet-facing"),
        ({"certificateArn": "arn:aws:acm:us-east-1:111122223333:certificate/0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"},
         f"{HUB}.certificateArn", "us-west-1"),
        ({"certificateArn": "my-cert"}, f"{HUB}.certificateArn", "ACM certificate ARN"),
        ({"image": "quay.io/jupyter/base-notebook:2025-01-01"}, f"{HUB}.image", "pinned by digest"),
        ({"pools": ["t4-shared"]}, f"{HUB}.pools", "g4-nodepool"),
        ({"idleMinutes": 4}, f"{HUB}.idleMinutes", "5"),
        ({"maxHours": 0}, f"{HUB}.maxHours", "1"),
        # g4-nodepool drains for 2h15m: a 3h notebook could be ended by expiry.
        ({"maxHours": 3}, f"{HUB}.maxHours", "terminationGracePeriod 2h15m"),
        ({"adminUsers": []}, f"{HUB}.auth.adminPassword", "adminUsers"),
        ({"auth": {"type": "sharedPassword", "password": "p" * 32, "adminPassword": "p" * 32}},
         f"{HUB}.auth.adminPassword", "must differ"),
        ({"auth": {"type": "github", "clientId": "x", "clientSecret": "[secret]", "allowedOrganizations": ["org"]},
          "hostname": None, "adminUsers": []}, f"{HUB}.hostname", "callback"),
        ({"auth": {"type": "dummy"}}, f"{HUB}.auth.type", "sharedPassword"),
        ({"adminUsers": ["in structor"]}, f"{HUB}.adminUsers[0]", "username"),
    ],
)  # fmt: skip
def test_one_key_path_error_per_mistake(changes: dict[str, Any], path: str, words: str) -> None:
    found = problems(with_hub(**changes))
    assert [p for p, _ in found] == [path], found
    assert words in found[0][1]


def test_the_quota_must_hold_gpu_slots_notebooks() -> None:
    labs = json.loads(STAGING.values["gpu-platform:labs"])
    labs[0]["cpu"] = "5"
    found = problems({**STAGING.values, "gpu-platform:labs": json.dumps(labs)})
    assert [p for p, _ in found] == ["gpu-platform:labs[0].cpu"] and "9 GPU notebooks" in found[0][1]


def test_a_hub_needs_karpenter_pools() -> None:
    labs = json.loads(STAGING.values["gpu-platform:labs"])
    labs[0].pop("sessions")  # the timetable needs a pool too; here only the hub's error is wanted
    config = {**STAGING.values, "gpu-platform:karpenter": json.dumps({"enabled": False}),
              "gpu-platform:demo": json.dumps({"enabled": False}), "gpu-platform:labs": json.dumps(labs)}  # fmt: skip
    assert [p for p, _ in problems(config)] == [HUB]


def test_hub_secrets_must_be_secure_values_and_nothing_else_may_be() -> None:
    clear = with_hub(auth={"type": "sharedPassword", "password": "workshop-2026", "adminPassword": "[secret]"})
    assert [p for p, _ in problems(clear, (f"{HUB}.auth.adminPassword",))] == [f"{HUB}.auth.password"]
    # At runtime Pulumi marks the whole key secret: then the program cannot tell, and accepts it.
    assert load_settings(clear, ("gpu-platform:labs",)).labs[0].hub is not None
    assert may_be_secret(f"{HUB}.auth.clientSecret")
    assert not may_be_secret("gpu-platform:labs[0].name")
    assert not may_be_secret(f"{HUB}.certificateArn")


def test_short_passwords_are_refused_unless_redacted() -> None:
    short = with_hub(auth={"type": "sharedPassword", "password": "short", "adminPassword": "[secret]"})
    assert [p for p, _ in problems(short, ("gpu-platform:labs",))] == [f"{HUB}.auth.password"]


def test_expiry_never_ends_a_notebook_the_pool_drains_long_enough() -> None:
    """maxHours is held like a session: every pool the hub offers drains for at least maxHours + the pod's grace."""
    message = dict(problems(with_hub(maxHours=3)))[f"{HUB}.maxHours"]
    assert "karpenter.nodePools.0.terminationGracePeriod" in message and "3h1m" in message
    settings = load_settings(STAGING.values, STAGING.secret_paths)
    (pool,) = settings.karpenter.node_pools
    # The session holds its pod 2h5m (5-minute lead + 2h class), the hub a notebook 2h: the longer counts.
    assert (
        settings.resolved.pool(pool.name).node_hold_seconds
        == max(settings.resolved.pool(pool.name).session_hold_seconds, 2 * 3600)
        == 125 * 60
    )
