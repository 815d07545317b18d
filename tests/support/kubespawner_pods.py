"""The notebook Pod kubespawner 7.0.0 itself builds from zero-to-jupyterhub 4.4.0 chart values (test helper).

`spawner_config` is the part of the chart's hub configuration that sets KubeSpawner traits, read from
jupyterhub/zero-to-jupyterhub-k8s `jupyterhub/files/hub/jupyterhub_config.py` @ 4.4.0, statement by statement
(same order, same conditions), on the merged values (chart defaults + ours). `spawned_pod` then runs the real
`KubeSpawner` (pinned in requirements-dev.txt, as the chart's `images/hub/requirements.txt` @ 4.4.0 pins it):
profile selection (`load_user_options`) and `get_pod_manifest`, which calls `kubespawner.objects.make_pod`.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
from pathlib import Path
from typing import Any

from traitlets.config import Config

CHART_NAME, CHART_VERSION = "jupyterhub", "4.4.0"

# jupyterhub_config.py @ 4.4.0: `for trait, cfg_key in (...)`: set_config_if_not_none(c.KubeSpawner, trait,
# "singleuser." + (cfg_key or camelCaseify(trait))).
SINGLEUSER_TRAITS: tuple[tuple[str, str | None], ...] = (
    ("pod_name_template", None),
    ("start_timeout", None),
    ("image_pull_policy", "image.pullPolicy"),
    ("events_enabled", "events"),
    ("extra_labels", None),
    ("extra_annotations", None),
    ("uid", None),
    ("fs_gid", None),
    ("service_account", "serviceAccountName"),
    ("storage_extra_labels", "storage.extraLabels"),
    ("node_selector", None),
    ("node_affinity_required", "extraNodeAffinity.required"),
    ("node_affinity_preferred", "extraNodeAffinity.preferred"),
    ("pod_affinity_required", "extraPodAffinity.required"),
    ("pod_affinity_preferred", "extraPodAffinity.preferred"),
    ("pod_anti_affinity_required", "extraPodAntiAffinity.required"),
    ("pod_anti_affinity_preferred", "extraPodAntiAffinity.preferred"),
    ("lifecycle_hooks", None),
    ("init_containers", None),
    ("extra_containers", None),
    ("mem_limit", "memory.limit"),
    ("mem_guarantee", "memory.guarantee"),
    ("cpu_limit", "cpu.limit"),
    ("cpu_guarantee", "cpu.guarantee"),
    ("extra_resource_limits", "extraResource.limits"),
    ("extra_resource_guarantees", "extraResource.guarantees"),
    ("environment", "extraEnv"),
    ("profile_list", None),
    ("extra_pod_config", None),
)
# A kubeconfig KubeSpawner can load (it loads one in __init__); nothing ever connects to it.
_OFFLINE_KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: offline, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: offline, user: {token: offline}}]
contexts: [{name: offline, context: {cluster: offline, user: offline}}]
current-context: offline
"""


def _camel(name: str) -> str:
    return re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)


def _get(values: dict[str, Any], dotted: str, default: Any = None) -> Any:
    """z2jh.get_config: a dotted key of the values, `default` when absent or null."""
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or node.get(part) is None:
            return default
        node = node[part]
    return node


def spawner_config(values: dict[str, Any], namespace: str, release: str) -> Config:
    """The KubeSpawner traits jupyterhub_config.py @ 4.4.0 sets from the merged chart values."""
    values = copy.deepcopy(values)
    values.setdefault("Chart", {"Name": CHART_NAME, "Version": CHART_VERSION})
    values.setdefault("Release", {"Name": release})
    c = Config()
    ks = c.KubeSpawner
    common = {}
    common["app.kubernetes.io/name"] = common["app"] = _get(values, "nameOverride", _get(values, "Chart.Name"))
    common["app.kubernetes.io/instance"] = common["release"] = release
    chart = f"{CHART_NAME}-{CHART_VERSION.replace('+', '_')}"
    common["helm.sh/chart"] = common["chart"] = chart
    common["app.kubernetes.io/managed-by"] = "kubespawner"
    ks.common_labels = common
    ks.namespace = namespace  # os.environ["POD_NAMESPACE"]: the release's namespace
    for trait, key in SINGLEUSER_TRAITS:
        value = _get(values, "singleuser." + (key or _camel(trait)))
        if value is not None:
            ks[trait] = value
    image = _get(values, "singleuser.image.name")
    if image:
        tag = _get(values, "singleuser.image.tag")
        ks.image = f"{image}:{tag}" if tag else image
    ks.allow_privilege_escalation = _get(values, "singleuser.allowPrivilegeEscalation")
    pull_secrets = [*(_get(values, "imagePullSecrets") or []), *(_get(values, "singleuser.image.pullSecrets") or [])]
    if _get(values, "imagePullSecret.automaticReferenceInjection") and _get(values, "imagePullSecret.create"):
        pull_secrets.insert(0, "image-pull-secret")
    if pull_secrets:
        ks.image_pull_secrets = pull_secrets
    if _get(values, "scheduling.userScheduler.enabled"):
        ks.scheduler_name = "user-scheduler"
    if _get(values, "scheduling.podPriority.enabled"):
        ks.priority_class_name = "priority"
    purpose = _get(values, "scheduling.userPods.nodeAffinity.matchNodePurpose")
    term = {"matchExpressions": [{"key": "hub.jupyter.org/node-purpose", "operator": "In", "values": ["user"]}]}
    if purpose == "prefer":
        ks.node_affinity_preferred = [*ks.get("node_affinity_preferred", []), {"weight": 100, "preference": term}]
    elif purpose == "require":
        ks.node_affinity_required = [*ks.get("node_affinity_required", []), term]
    tolerations = (_get(values, "scheduling.userPods.tolerations") or []) + (
        _get(values, "singleuser.extraTolerations") or []
    )
    if tolerations:
        ks.tolerations = tolerations
    volumes: dict[str, Any] = {}
    mounts: dict[str, Any] = {}
    if _get(values, "singleuser.storage.type") == "dynamic":
        if _get(values, "singleuser.storage.dynamic.pvcNameTemplate"):
            ks.pvc_name_template = _get(values, "singleuser.storage.dynamic.pvcNameTemplate")
        volume = _get(values, "singleuser.storage.dynamic.volumeNameTemplate")
        ks.storage_pvc_ensure = True
        for trait, key in (
            ("storage_class", "dynamic.storageClass"),
            ("storage_access_modes", "dynamic.storageAccessModes"),
            ("storage_capacity", "capacity"),
        ):
            if _get(values, "singleuser.storage." + key) is not None:
                ks[trait] = _get(values, "singleuser.storage." + key)
        volumes = {volume: {"name": volume, "persistentVolumeClaim": {"claimName": "{pvc_name}"}}}
        mounts = {
            volume: {
                "mountPath": _get(values, "singleuser.storage.homeMountPath"),
                "name": volume,
                "subPath": _get(values, "singleuser.storage.dynamic.subPath"),
            }
        }
    extra_files = _get(values, "singleuser.extraFiles", {})
    if extra_files:  # the singleuser Secret's keys as files (its name: get_name("singleuser"), unprefixed)
        items = [
            {"key": key, "path": key, **({"mode": f["mode"]} if "mode" in f else {})} for key, f in extra_files.items()
        ]
        volumes["files"] = {"name": "files", "secret": {"secretName": "singleuser", "items": items}}
        for index, (key, details) in enumerate(extra_files.items()):
            mounts[f"{index}-files"] = {"mountPath": details["mountPath"], "subPath": key, "name": "files"}
    assert _get(values, "singleuser.storage.type") in ("dynamic", "none"), "static storage: not modelled here"
    extra_volumes = _get(values, "singleuser.storage.extraVolumes", {})
    volumes.update(extra_volumes if isinstance(extra_volumes, dict) else {v["name"]: v for v in extra_volumes})
    extra_mounts = _get(values, "singleuser.storage.extraVolumeMounts", {})
    if isinstance(extra_mounts, dict):
        mounts.update(extra_mounts)
    else:
        mounts.update({f"{i}-{m['name']}": m for i, m in enumerate(extra_mounts)})
    ks.volumes = volumes
    ks.volume_mounts = mounts
    if "cmd" in values.get("singleuser", {}):
        c.Spawner.cmd = values["singleuser"]["cmd"]
    if _get(values, "singleuser.defaultUrl") is not None:
        c.Spawner.default_url = _get(values, "singleuser.defaultUrl")
    if _get(values, "singleuser.cloudMetadata.blockWithIptables") is True:
        raise AssertionError("the chart would add its root, NET_ADMIN iptables init container")
    for section, settings in (_get(values, "hub.config") or {}).items():
        c[section].update(settings)
    return c


def _offline_kubeconfig() -> str:
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"gpu-platform-kubespawner-{os.getpid()}.kubeconfig"
    path.write_text(_OFFLINE_KUBECONFIG, encoding="utf-8")
    return str(path)


class _User:
    def __init__(self, name: str):
        self.name, self.id, self.url = name, 1, f"/user/{name}/"


class _Hub:
    public_host, url, base_url, api_url = "hub.example.org", "http://hub:8081/hub/", "/hub/", "http://hub:8081/hub/api"


def spawned_pod(
    values: dict[str, Any], *, namespace: str, release: str, profile: str, username: str
) -> tuple[dict[str, Any], list[str]]:
    """(the Pod KubeSpawner builds for `username` choosing `profile`, the env names the hub sets at spawn time)."""
    from kubernetes_asyncio.config import kube_config
    from kubespawner import KubeSpawner

    # KubeSpawner loads a kubeconfig in __init__ (never used here): point the default location at a dummy one.
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = _offline_kubeconfig()

    async def spawn() -> tuple[dict[str, Any], list[str]]:
        spawner = KubeSpawner(_mock=True, config=spawner_config(values, namespace, release), user=_User(username))
        spawner.hub = _Hub()
        spawner.user_options = {"profile": profile}
        await spawner.load_user_options()
        pod = await spawner.get_pod_manifest()
        # Per user and per spawn: the hub's URLs and the user's API token (also as the legacy JPY_API_TOKEN),
        # and whatever of the hub process's own environment `env_keep` passes on.
        spawn_time = [
            k for k in spawner.get_env() if k.startswith("JUPYTERHUB_") or k == "JPY_API_TOKEN" or k in spawner.env_keep
        ]
        await spawner.api.api_client.close()
        from kubernetes_asyncio.client import ApiClient  # heavy (every API model): imported by the tests that spawn

        async with ApiClient() as client:
            return client.sanitize_for_serialization(pod), spawn_time

    return asyncio.run(spawn())


def helm_merge(defaults: Any, overrides: Any) -> Any:
    """Helm's coalescing of a chart's values with the user's: maps merged key by key, anything else replaced."""
    if isinstance(defaults, dict) and isinstance(overrides, dict):
        merged = dict(defaults)
        for key, value in overrides.items():
            merged[key] = helm_merge(defaults.get(key), value) if key in defaults else copy.deepcopy(value)
        return merged
    return copy.deepcopy(overrides)


def without_nulls(values: Any) -> Any:
    """The values the templates see: Helm drops null keys when it coalesces (a null removes a default)."""
    if isinstance(values, dict):
        return {k: without_nulls(v) for k, v in values.items() if v is not None}
    if isinstance(values, list):
        return [without_nulls(v) for v in values]
    return values
