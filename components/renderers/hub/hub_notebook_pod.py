"""The notebook Pod a lab's hub spawns, as kubespawner 7.0.0 builds it (`KubeSpawner.get_pod_manifest` ->
`objects.make_pod`) from the traits the chart's `jupyterhub/files/hub/jupyterhub_config.py` @ 4.4.0 sets from
`hub_values.chart_values`; tests/hub/test_hub.py proves the two equal by running kubespawner itself. Left out: the
per-user variables the hub adds at spawn time (`JUPYTERHUB_*`, among them the user's API token, and the hub
process's `env_keep`). The synth writes one per lab and profile (manifests/pod-<lab>-notebook-<profile>.yaml).

Pure: settings in, dicts out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from components.facts.constants import (
    DO_NOT_DISRUPT_ANNOTATION,
    GPU_RESOURCE,
    JUPYTERHUB_CHART,
    JUPYTERHUB_CHART_VERSION,
    JUPYTERHUB_VERSION,
    KUBESPAWNER_VERSION,
)
from components.facts.jupyterhub_chart import HUB_RELEASE
from components.renderers.hub.hub_database import notebook_sqlite_files
from components.renderers.hub.hub_namespace import files_volume
from components.renderers.hub.hub_profiles import Profile, cpu_cores, kubespawner_override, profiles
from components.renderers.hub.hub_values import (
    HOME_MOUNT_PATH,
    NOTEBOOK_CHECKOV_SKIPS,
    NOTEBOOK_CONTAINER_SECURITY,
    NOTEBOOK_FS_GID,
    NOTEBOOK_POD_SECURITY,
    NOTEBOOK_UID,
    image_reference,
)
from components.renderers.manifest_helpers import checkov_skip_annotations
from components.settings import LabSettings, ResolvedStack

Manifest = dict[str, Any]
Values = dict[str, Any]

# The user whose Pod the synth writes per profile (manifests/pod-<lab>-notebook-<profile>.yaml).
EXAMPLE_LEARNER: Final = "learner"
NOTEBOOK_PORT: Final = 8888


def _labels(lab: LabSettings) -> dict[str, str]:
    """kubespawner's `_build_pod_labels`: username, extraLabels, the chart's common_labels, component, server."""
    chart = f"{JUPYTERHUB_CHART}-{JUPYTERHUB_CHART_VERSION}"
    return {
        "hub.jupyter.org/username": EXAMPLE_LEARNER,
        "hub.jupyter.org/network-access-hub": "true",  # chart default singleuser.extraLabels
        "app.kubernetes.io/name": JUPYTERHUB_CHART,
        "app": JUPYTERHUB_CHART,
        "app.kubernetes.io/instance": HUB_RELEASE,
        "release": HUB_RELEASE,
        "helm.sh/chart": chart,
        "chart": chart,
        "app.kubernetes.io/managed-by": "kubespawner",
        "app.kubernetes.io/component": "singleuser-server",
        "component": "singleuser-server",
        "hub.jupyter.org/servername": "",
    }


def _annotations() -> dict[str, str]:
    return {
        "hub.jupyter.org/username": EXAMPLE_LEARNER,
        "hub.jupyter.org/kubespawner-version": KUBESPAWNER_VERSION,
        "hub.jupyter.org/jupyterhub-version": JUPYTERHUB_VERSION,
        DO_NOT_DISRUPT_ANNOTATION: "true",
        **checkov_skip_annotations(NOTEBOOK_CHECKOV_SKIPS),
    }


def _resources(profile: Profile) -> Values:
    override = kubespawner_override(profile)
    requests: Values = {"cpu": override["cpu_guarantee"], "memory": profile.shape.memory_mib * 1024**2}
    limits: Values = {"cpu": override["cpu_limit"], "memory": profile.shape.memory_mib * 1024**2}
    if profile.gpu:
        requests[GPU_RESOURCE] = "1"
        limits[GPU_RESOURCE] = "1"
    return {"limits": limits, "requests": requests}


def _env(profile: Profile, image: str) -> list[dict[str, str]]:
    """What jupyterhub's Spawner.get_env and KubeSpawner.get_env set from configuration, sorted as make_pod sorts."""
    cores, memory = str(cpu_cores(profile.shape)), str(profile.shape.memory_mib * 1024**2)
    env = {
        "CPU_GUARANTEE": cores,
        "CPU_LIMIT": cores,
        "JUPYTER_IMAGE": image,
        "JUPYTER_IMAGE_SPEC": image,
        "MEM_GUARANTEE": memory,
        "MEM_LIMIT": memory,
    }
    return [{"name": name, "value": value} for name, value in sorted(env.items())]


def _files_volume() -> Manifest:
    """The `singleuser.extraFiles` volume, on the lab's copy of their Secret (`hub_namespace.files_volume`)."""
    return files_volume()


def _file_mounts() -> list[Manifest]:
    files = notebook_sqlite_files()
    return [{"mountPath": files[key]["mountPath"], "name": "files", "subPath": key} for key in sorted(files)]


def notebook_pod(lab: LabSettings, profile: Profile) -> Manifest:
    """The Pod the lab's hub spawns for `EXAMPLE_LEARNER` choosing `profile` (kubespawner 7.0.0 make_pod)."""
    hub = lab.hub
    assert hub is not None
    image = image_reference(hub)
    volume = f"volume-{EXAMPLE_LEARNER}"
    override = kubespawner_override(profile)
    spec: Manifest = {
        "automountServiceAccountToken": False,
        "containers": [
            {
                "args": ["jupyterhub-singleuser"],
                "env": _env(profile, image),
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "lifecycle": {},
                "name": "notebook",
                "ports": [{"containerPort": NOTEBOOK_PORT, "name": "notebook-port"}],
                "resources": _resources(profile),
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "runAsUser": NOTEBOOK_UID,
                    **NOTEBOOK_CONTAINER_SECURITY,
                },
                # KubeSpawner sorts both by key: the extraFiles mounts ("<i>-files") before the home volume.
                "volumeMounts": [*_file_mounts(), {"mountPath": HOME_MOUNT_PATH, "name": volume}],
            }
        ],
        "imagePullSecrets": [],
        "nodeSelector": dict(override["node_selector"]),
        "restartPolicy": "OnFailure",
        "securityContext": {"fsGroup": NOTEBOOK_FS_GID, **NOTEBOOK_POD_SECURITY},
        "volumes": [
            _files_volume(),
            {"name": volume, "persistentVolumeClaim": {"claimName": f"claim-{EXAMPLE_LEARNER}"}},
        ],
    }
    if override.get("tolerations"):
        spec["tolerations"] = [dict(t) for t in override["tolerations"]]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": _annotations(),
            "labels": _labels(lab),
            "name": f"jupyter-{EXAMPLE_LEARNER}",
            "namespace": lab.name,
        },
        "spec": spec,
    }


def notebook_pod_file(lab: LabSettings, profile: Profile) -> str:
    return f"pod-{lab.name}-notebook-{profile.slug}.yaml"


def notebook_pods(labs: Sequence[LabSettings], resolved: ResolvedStack) -> dict[str, Manifest]:
    """`manifests/pod-<lab>-notebook-<profile>.yaml` -> the Pod, for every lab with a hub and every profile."""
    pods: dict[str, Manifest] = {}
    for lab in labs:
        if lab.hub is not None:
            for profile in profiles(resolved.hub_pools(lab.hub)):
                pods[notebook_pod_file(lab, profile)] = notebook_pod(lab, profile)
    return pods
