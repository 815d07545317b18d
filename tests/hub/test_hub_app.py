"""The hub's own receivers: each login type's rendered values, loaded by the real JupyterHub through the chart.

For sharedPassword (staging), github (prod) and oidc (a staging variant), the merged chart values go where the chart
mounts them, and JupyterHub 5.5.0 starts from the chart's `jupyterhub_config.py` @ 4.4.0 with the hub image's
authenticators (oauthenticator 17.4.0) and KubeSpawner 7.0.0 (`tests/support/hub_app.py`): any exception, and any warning
or error the hub logs, fails. The authenticator then decides logins, and the spawner builds every profile's Pod,
which must equal the Pod the synth writes.

Secrets: the offline synth cannot decrypt `secure:` values and reads them as `[secret]`; a deploy hands the chart
the decrypted ones. The hub gets distinct secrets of the shortest length the settings accept, so a settings minimum
below JupyterHub's own would fail here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.facts import jupyterhub_chart
from components.renderers.hub import hub_namespace, hub_notebook_pod, hub_profiles, hub_storage, hub_values
from components.settings import LabSettings, StackSettings
from components.settings.hub import ADMIN_PASSWORD_MIN_LENGTH, SHARED_PASSWORD_MIN_LENGTH
from tests.conftest import PROJECT_DIR, STACKS, shared_path
from tests.support.hub_app import OIDC_AUTH, hub_tree
from tests.support.kubespawner_pods import helm_merge, without_nulls
from tests.support.settings import settings_for

CHART_DIR = ("schemas", "jupyterhub", "4.4.0")
LEARNER = hub_notebook_pod.EXAMPLE_LEARNER
# A deploy's decrypted secrets: distinct, each as short as the settings allow.
DECRYPTED = {
    "user_password": "u" * SHARED_PASSWORD_MIN_LENGTH,
    "admin_password": "a" * ADMIN_PASSWORD_MIN_LENGTH,
    "client_secret": "c" * 40,
}
# What the hub logs at WARNING and above (JupyterHub's log format), and traitlets' unknown-option warning.
BAD_LOG = ("[W ", "[E ", "[C ", "not recognized", "Traceback")


@cache
def chart_defaults() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(shared_path(*CHART_DIR, "values.yaml").read_text(encoding="utf-8"))
    return loaded


def changed_hub(settings: StackSettings, **hub: Any) -> tuple[StackSettings, LabSettings]:
    """The stack with its first hub's keys changed, validated again as a whole."""
    dumped = settings.model_dump(by_alias=True, exclude_none=True)
    lab = next(x for x in dumped["labs"] if "hub" in x)
    lab["hub"] = {**lab["hub"], **hub}
    changed = StackSettings.model_validate(dumped)
    return changed, next(x for x in changed.labs if x.name == lab["name"])


def decrypted_values(settings: StackSettings, lab: LabSettings) -> dict[str, Any]:
    """The merged values the hub Secret holds after a deploy (Helm drops nulls when it coalesces)."""
    assert lab.hub is not None
    values = hub_values.chart_values(lab, hub_storage.storage_class_name(lab), settings.resolved.hub_pools(lab.hub))
    for section in values["hub"]["config"].values():
        for trait in DECRYPTED.keys() & section.keys():
            section[trait] = DECRYPTED[trait]
    merged: dict[str, Any] = without_nulls(helm_merge(chart_defaults(), values))
    return merged


def logins_for(lab: LabSettings) -> dict[str, tuple[str | None, list[str]]]:
    """Logins to decide, per name: (a password, or None for an OAuth login with these IdP groups)."""
    assert lab.hub is not None
    if lab.hub.auth.type == "sharedPassword":
        return {"right": (DECRYPTED["user_password"], []), "wrong": ("not-the-password", [])}
    if lab.hub.auth.type == "oidc":
        return {"member@example.org": (None, ["learners"]), "stranger@example.org": (None, ["others"])}
    return {}  # GitHub asks its API for organisation membership: not offline


def start_hubs(cases: dict[str, tuple[LabSettings, dict[str, Any], list[str]]], tmp: Path) -> dict[str, Any]:
    """Start one hub per case (lab, merged values, profile slugs), each in a fresh interpreter, all together;
    (exit code, stderr, report) per case."""
    running = {}
    for case, (lab, values, profiles) in cases.items():
        root = tmp / case
        root.mkdir()
        # The release goes into the hub's namespace; POD_NAMESPACE is that (the chart's downward API).
        env = hub_tree(root, values, hub_namespace.hub_namespace(lab.name), jupyterhub_chart.HUB_RELEASE)
        request = {"chart_dir": str(shared_path(*CHART_DIR)), "learner": LEARNER, "profiles": profiles,
                   "logins": logins_for(lab)}  # fmt: skip
        (root / "request.json").write_text(json.dumps(request), encoding="utf-8")
        (root / "work").mkdir()  # the hub's working directory (/srv/jupyterhub): the sqlite-pvc database goes here
        running[case] = subprocess.Popen(
            [sys.executable, "-m", "tests.support.hub_app", str(root)],
            cwd=root / "work",
            env={**os.environ, **env, "PYTHONPATH": str(PROJECT_DIR)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    results = {}
    for case, process in running.items():
        out, err = process.communicate(timeout=180)
        lines = out.strip().splitlines()
        results[case] = (process.returncode, err, json.loads(lines[-1]) if process.returncode == 0 else None)
    return results


@pytest.fixture(scope="module")
def hubs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    settings = {stack: settings_for(stack) for stack in STACKS}
    shipped = {stack: next(lab for lab in s.labs if lab.hub is not None) for stack, s in settings.items()}
    cases = {"staging": (settings["staging"], shipped["staging"]), "prod": (settings["prod"], shipped["prod"]),
             "oidc": changed_hub(settings["staging"], auth=OIDC_AUTH, hostname="hub.example.org",
                                 adminUsers=["teacher@example.org"])}  # fmt: skip
    runs: dict[str, tuple[LabSettings, dict[str, Any], list[str]]] = {}
    for case, (stack_settings, lab) in cases.items():
        assert lab.hub is not None
        slugs = [p.slug for p in hub_profiles.profiles(stack_settings.resolved.hub_pools(lab.hub))]
        runs[case] = (lab, decrypted_values(stack_settings, lab), slugs)
    # Not vacuous: the oidc values as rendered before manage_groups, and an admin password one character short.
    oidc_lab, oidc_values, _ = runs["oidc"]
    broken = json.loads(json.dumps(oidc_values))
    del broken["hub"]["config"]["GenericOAuthenticator"]["manage_groups"]
    runs["oidc-no-manage-groups"] = (oidc_lab, broken, [])
    staging_lab, staging_values, _ = runs["staging"]
    short = json.loads(json.dumps(staging_values))
    short["hub"]["config"]["SharedPasswordAuthenticator"]["admin_password"] = "a" * (ADMIN_PASSWORD_MIN_LENGTH - 1)
    runs["short-admin-password"] = (staging_lab, short, [])
    memory_settings, memory_lab = changed_hub(settings["staging"], database="sqliteMemory")
    runs["sqlite-memory"] = (memory_lab, decrypted_values(memory_settings, memory_lab), [])
    return {"cases": cases, "runs": start_hubs(runs, tmp_path_factory.mktemp("hubs"))}


def test_each_login_type_loads_in_the_real_hub(hubs: dict[str, Any]) -> None:
    expected = {
        "staging": "SharedPasswordAuthenticator",
        "prod": "GitHubOAuthenticator",
        "oidc": "GenericOAuthenticator",
    }
    for case, (_, lab) in hubs["cases"].items():
        code, err, report = hubs["runs"][case]
        assert code == 0, f"{case}:\n{err[-3000:]}"
        assert [line for line in err.splitlines() if any(bad in line for bad in BAD_LOG)] == [], case
        assert report["authenticator"] == expected[case] and report["spawner"] == "KubeSpawner"
        assert report["admin_users"] == sorted(lab.hub.admin_users), case
        # The hub runs in `<lab>-hub`; hub.config's KubeSpawner.namespace wins over POD_NAMESPACE: notebooks go into
        # the lab's namespace, and reach the hub's API across namespaces by its full service name.
        assert report["spawner_namespace"] == lab.name
        assert report["notebook_api_url"] == f"http://hub.{lab.name}-hub.svc:8081/hub/api", case


def test_the_authenticators_decide_logins(hubs: dict[str, Any]) -> None:
    assert hubs["runs"]["staging"][2]["logins"] == {"right": "right", "wrong": None}
    # oidc: only members of allowedGroups get in (the groups claim read through auth_state_groups_key).
    assert hubs["runs"]["oidc"][2]["logins"] == {"member@example.org": True, "stranger@example.org": False}


def test_the_real_spawner_builds_the_pods_the_synth_writes(hubs: dict[str, Any]) -> None:
    compared = 0
    for case, (stack_settings, lab) in hubs["cases"].items():
        assert lab.hub is not None
        for profile in hub_profiles.profiles(stack_settings.resolved.hub_pools(lab.hub)):
            built = hubs["runs"][case][2]["pods"][profile.slug]
            pod = built["pod"]
            container = pod["spec"]["containers"][0]
            container["env"] = [e for e in container["env"] if e["name"] not in built["spawn_time_env"]]
            rendered = hub_notebook_pod.notebook_pod(lab, profile)
            assert rendered["metadata"].pop("namespace") == lab.name
            assert rendered == pod, f"{case}-{profile.slug}"
            compared += 1
    assert compared >= 6


def test_the_hub_refuses_what_the_real_classes_refuse(hubs: dict[str, Any]) -> None:
    code, err, _ = hubs["runs"]["oidc-no-manage-groups"]
    assert code != 0 and "requires GenericOAuthenticator.manage_groups to also be set" in err
    code, err, _ = hubs["runs"]["short-admin-password"]
    assert code != 0 and "admin_password" in err and str(ADMIN_PASSWORD_MIN_LENGTH) in err


def test_the_hub_database_is_where_the_settings_say(hubs: dict[str, Any]) -> None:
    """sqliteVolume: the chart's sqlite-pvc, a file in the hub's working directory (the volume's mount);
    sqliteMemory: the chart's sqlite-memory."""
    assert {hubs["runs"][case][2]["db_url"] for case in hubs["cases"]} == {"sqlite:///jupyterhub.sqlite"}
    code, err, report = hubs["runs"]["sqlite-memory"]
    assert code == 0, err[-3000:]
    assert report["db_url"] == "sqlite://"
