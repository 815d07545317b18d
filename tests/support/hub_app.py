"""A lab's hub started as its pod starts it, offline: JupyterHub 5.5.0 loading the chart's own configuration.

The hub container runs `jupyterhub --config /usr/local/etc/jupyterhub/jupyterhub_config.py --upgrade-db`
(jupyterhub/zero-to-jupyterhub-k8s `jupyterhub/templates/hub/deployment.yaml` @ 4.4.0). That file and its helper
`z2jh.py` (../shared/schemas/jupyterhub/4.4.0/, verbatim @ 4.4.0) read what the chart mounts under
/usr/local/etc/jupyterhub: `secret/values.yaml` (the merged values plus `Chart` and `Release`) and the
`hub.config.*` secrets (`templates/hub/secret.yaml`), `config/<name>` (the ConfigMap's name templates,
`templates/_helpers-names.tpl`), and the Services' `*_SERVICE_PORT` environment variables.

`hub_tree` writes that layout into a scratch folder. `main` (run as `python -m tests.support.hub_app ROOT` in a fresh
interpreter, so every cache and singleton is new) roots z2jh's fixed paths at ROOT: z2jh is loaded from the shared
folder unchanged, and only its module-level names `open` and `os` are given versions that map
/usr/local/etc/jupyterhub to ROOT. Then the real `JupyterHub.initialize` runs (config file, database, proxy
settings, authenticator and its allow config, users, services, roles, handlers), the real authenticator decides a
few logins and the real `KubeSpawner` builds each profile's Pod. Any exception fails the run. The report is JSON
on stdout's last line.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

# An oidc login block as an operator writes it (group-restricted: oauthenticator 17 then needs manage_groups).
OIDC_AUTH = {
    "type": "oidc",
    "clientId": "abc",
    "clientSecret": "[secret]",
    "authorizeUrl": "https://auth.example.org/oauth2/authorize",
    "tokenUrl": "https://auth.example.org/oauth2/token",
    "userdataUrl": "https://auth.example.org/oauth2/userInfo",
    "allowedGroups": ["learners"],
}
CHART_NAME, CHART_VERSION, APP_VERSION = "jupyterhub", "4.4.0", "5.5.0"
HUB_ETC = "/usr/local/etc/jupyterhub"
# The chart's defaults with `fullnameOverride: ""`: unprefixed names (templates/_helpers-names.tpl @ 4.4.0).
NAMES = {"hub": "hub", "proxy-api": "proxy-api", "singleuser": "singleuser", "user-scheduler": "user-scheduler"}
# The Services' ports (templates/hub/service.yaml, templates/proxy/service.yaml @ 4.4.0), as Kubernetes exposes them.
SERVICE_ENV = {"HUB_SERVICE_PORT": "8081", "PROXY_API_SERVICE_PORT": "8001"}
_OFFLINE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: offline, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: offline, user: {token: offline}}]
contexts: [{name: offline, context: {cluster: offline, user: offline}}]
current-context: offline
"""


def hub_tree(root: Path, values: dict[str, Any], namespace: str, release: str) -> dict[str, str]:
    """Write what the chart mounts into the hub pod under `root`; return the pod's environment for the hub."""
    secret, config = root / "secret", root / "config"
    secret.mkdir(parents=True)
    config.mkdir()
    # templates/hub/secret.yaml: the values, plus a subset of Chart and Release.
    mounted = {
        **values,
        "Chart": {"Name": CHART_NAME, "Version": CHART_VERSION, "AppVersion": APP_VERSION},
        "Release": {"Name": release, "Namespace": namespace, "Service": "Helm"},
    }
    (secret / "values.yaml").write_text(yaml.safe_dump(mounted), encoding="utf-8")
    # The three values the chart generates when unset (randHex 64 in templates/hub/_helpers-passwords.tpl).
    generated = {key: secrets.token_hex(32) for key in ("ConfigurableHTTPProxy.auth_token", "JupyterHub.cookie_secret",
                                                         "CryptKeeper.keys")}  # fmt: skip
    for key, value in generated.items():
        (secret / f"hub.config.{key}").write_text(value, encoding="utf-8")
    for name, full in NAMES.items():
        (config / name).write_text(full, encoding="utf-8")
    return {
        **SERVICE_ENV,
        "POD_NAMESPACE": namespace,
        "HELM_RELEASE_NAME": release,
        "CONFIGPROXY_AUTH_TOKEN": generated["ConfigurableHTTPProxy.auth_token"],
    }


def _rooted(root: Path) -> Callable[[str], str]:
    def rooted(path: str) -> str:
        return str(root / path.removeprefix(HUB_ETC + "/")) if str(path).startswith(HUB_ETC + "/") else path

    return rooted


class _RootedPath:
    def __init__(self, rooted: Callable[[str], str]):
        self._rooted = rooted

    def exists(self, path: str) -> bool:
        return os.path.exists(self._rooted(path))

    def __getattr__(self, name: str) -> Any:
        return getattr(os.path, name)


class _RootedOs:
    def __init__(self, rooted: Callable[[str], str]):
        self.path = _RootedPath(rooted)

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


def load_rooted_z2jh(chart_dir: Path, root: Path) -> Any:
    """The chart's z2jh module, unchanged, with /usr/local/etc/jupyterhub mapped to `root`."""
    spec = importlib.util.spec_from_file_location("z2jh", chart_dir / "z2jh.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rooted = _rooted(root)
    # Module globals come before builtins in name lookup: z2jh's `open(...)` and `os.path.exists(...)` find these.
    setattr(module, "open", lambda path, *args, **kwargs: open(rooted(path), *args, **kwargs))  # noqa: B010, SIM115
    setattr(module, "os", _RootedOs(rooted))  # noqa: B010
    sys.modules["z2jh"] = module  # what jupyterhub_config.py's `from z2jh import ...` finds
    return module


async def _oauth_login(authenticator: Any, name: str, groups: list[str]) -> bool:
    """The real OAuthenticator path after the token exchange (oauthenticator/oauth2.py @ 17.4.0
    `_token_to_auth_model`: username claim, auth state, managed groups), then `check_allowed`. Only the one HTTP call
    in it, `token_to_user`, answers as the IdP's userinfo endpoint would."""

    async def userinfo(token_info: dict[str, Any]) -> dict[str, Any]:
        return {authenticator.username_claim: name, "groups": groups}

    authenticator.token_to_user = userinfo
    model = await authenticator._token_to_auth_model({"access_token": "offline", "token_type": "Bearer"})
    return bool(await authenticator.check_allowed(model["name"], model))


async def _load(config_file: Path, request: dict[str, Any]) -> dict[str, Any]:
    from jupyterhub import orm
    from jupyterhub.app import JupyterHub
    from kubernetes_asyncio.client import ApiClient

    app = JupyterHub.instance()
    await app.initialize(["--config", str(config_file), "--upgrade-db"])
    authenticator = app.authenticator
    report: dict[str, Any] = {
        "authenticator": type(authenticator).__name__,
        "spawner": app.spawner_class.__name__,
        "db_url": app.db_url,
        "admin_users": sorted(authenticator.admin_users),
        "logins": {},
        "pods": {},
    }
    for name, (password, groups) in request.get("logins", {}).items():
        if password is not None:
            model = await authenticator.authenticate(None, {"username": name, "password": password})
            report["logins"][name] = model["name"] if isinstance(model, dict) else model
        else:
            report["logins"][name] = await _oauth_login(authenticator, name, groups)
    async with ApiClient() as client:
        for profile in request["profiles"]:
            # A fresh spawner per profile, as per spawn in the hub (jupyterhub/user.py @ 5.5.0 `User.stop` pops the
            # stopped spawner; one that loaded a profile keeps its traits).
            orm_user = orm.User(name=request["learner"])
            app.db.add(orm_user)
            app.db.commit()
            spawner = app.users[orm_user.id].spawners[""]
            report["spawner_namespace"] = spawner.namespace
            report["notebook_api_url"] = env_api_url = spawner.get_env()["JUPYTERHUB_API_URL"]
            assert env_api_url.startswith(app.hub.api_url)
            spawner.user_options = {"profile": profile}
            await spawner.load_user_options()
            pod = client.sanitize_for_serialization(await spawner.get_pod_manifest())
            env = spawner.get_env()
            spawn_time = [
                k for k in env if k.startswith("JUPYTERHUB_") or k == "JPY_API_TOKEN" or k in spawner.env_keep
            ]
            report["pods"][profile] = {"pod": pod, "spawn_time_env": spawn_time}
            await spawner.api.api_client.close()
            app.users.delete(orm_user.id)
    return report


def main(root_arg: str) -> None:
    root = Path(root_arg)
    request = json.loads((root / "request.json").read_text(encoding="utf-8"))
    chart_dir = Path(request["chart_dir"])
    load_rooted_z2jh(chart_dir, root)
    kubeconfig = root / "kubeconfig"
    kubeconfig.write_text(_OFFLINE_KUBECONFIG, encoding="utf-8")
    from kubernetes_asyncio.config import kube_config

    # The hub's own service account would be used in the pod; KubeSpawner only loads a config here, never connects.
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(kubeconfig)
    report = asyncio.run(_load(chart_dir / "jupyterhub_config.py", request))
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main(sys.argv[1])
