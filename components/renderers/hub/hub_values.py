"""A lab's JupyterHub as plain data: the zero-to-jupyterhub 4.4.0 chart values.

Pure renderers (settings in, dicts out). The hub runs in `<lab>-hub` (`hub_namespace`) and KubeSpawner spawns
into the lab's own namespace, so the lab's quota, LimitRange, NetworkPolicies, Pod Security `restricted` and the
GPU guard apply to every notebook unchanged.
The spawn page's profiles are in `hub_profiles`, sign-in and the load balancer in `hub_access`, and the Pod
kubespawner builds from these values in `hub_notebook_pod`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Final

from components.facts.constants import DO_NOT_DISRUPT_ANNOTATION, SYSTEM_NODE_LABEL_KEY, SYSTEM_NODE_LABEL_VALUE
from components.renderers.hub.hub_access import authenticator_config, proxy_service
from components.renderers.hub.hub_database import db_values, notebook_sqlite_files
from components.renderers.hub.hub_namespace import files_volume, hub_service_url, hub_side_values
from components.renderers.hub.hub_profiles import cpu_cores, cpu_profile, memory_quantity, profile_list
from components.renderers.manifest_helpers import checkov_skip_annotations
from components.settings import HubSettings, KarpenterPool, LabSettings

Values = dict[str, Any]

# jupyter/docker-stacks images run as jovyan (uid 1000, group users = 100) with its home and conda owned so.
NOTEBOOK_UID: Final = 1000
NOTEBOOK_FS_GID: Final = 100
HOME_MOUNT_PATH: Final = "/home/jovyan"
# Karpenter provisioning a GPU node (~2 min) plus a first pull of a multi-GB CUDA image on a cold node.
SPAWN_TIMEOUT_SECONDS: Final = 900
CULL_EVERY_SECONDS: Final = 60

# Restricted Pod Security for every notebook: kubespawner merges these into the pod and container
# securityContext (with `uid` -> runAsUser, `fs_gid` -> fsGroup, allowPrivilegeEscalation false).
NOTEBOOK_POD_SECURITY: Final = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
NOTEBOOK_CONTAINER_SECURITY: Final = {"capabilities": {"drop": ["ALL"]}}
# The chart's NetworkPolicies add to the lab's (policies are additive): none of them may open more egress than
# the lab's DNS + HTTPS, least of all the cloud metadata server. DNS only to kube-system (CoreDNS).
CHART_EGRESS_OFF: Final = {
    "cloudMetadataServer": False,
    "dnsPortsCloudMetadataServer": False,
    "dnsPortsKubeSystemNamespace": True,
    "dnsPortsPrivateIPs": False,
    "nonPrivateIPs": False,
    "privateIPs": False,
}
# checkov reads skips from the object; the notebook pods carry them as annotations (kubespawner extra_annotations).
NOTEBOOK_CHECKOV_SKIPS: Final = {
    "CKV_K8S_8": "kubespawner adds no probes; the hub itself polls each notebook server and culls dead ones",
    "CKV_K8S_9": "kubespawner adds no probes; the proxy routes to a notebook only after the hub saw it start",
    "CKV_K8S_15": "the image is pinned by digest; IfNotPresent uses the copy GPU nodes pre-pull at boot",
    "CKV_K8S_22": "notebooks install packages and write caches into the image's conda tree; the NVIDIA hooks write too",
    "CKV_K8S_40": "jupyter docker-stacks images own their home and conda tree as jovyan, uid 1000",
}


def image_parts(image: str) -> tuple[str, str]:
    """`registry/repo:tag@sha256:d` -> (`registry/repo`, `tag@sha256:d`): the chart joins them with ':'."""
    match = re.fullmatch(r"(.+?/[^:@]+)(?::([^@]+))?@(sha256:[a-f0-9]{64})", image)
    if not match:
        raise ValueError(f"not an image pinned by digest: {image}")
    name, tag, digest = match.groups()
    return name, f"{tag}@{digest}" if tag else digest


def image_reference(hub: HubSettings) -> str:
    """The image as kubespawner names it (`name:tag`), i.e. what the kubelet pulls and nodes pre-pull."""
    name, tag = image_parts(hub.image)
    return f"{name}:{tag}"


def _system_nodes() -> Values:
    return {SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE}


def _network_policy(**rules: list[Values]) -> Values:
    """A chart component's NetworkPolicy values: no egress beyond DNS, plus `rules` (`egress`, `ingress`)."""
    return {"egressAllowRules": dict(CHART_EGRESS_OFF), **rules}


def chart_values(lab: LabSettings, storage_class: str, pools: Sequence[KarpenterPool]) -> Values:
    """This program's values for the lab's chart (Helm deep-merges them over the chart's defaults); `pools`: the
    Karpenter pools the lab's hub offers (its GPU profiles)."""
    hub = lab.hub
    assert hub is not None
    image_name, image_tag = image_parts(hub.image)
    cpu = cpu_profile()
    cross = hub_side_values(lab)
    return {
        "hub": {
            "config": {
                **_with_jupyterhub(authenticator_config(hub), {"hub_connect_url": hub_service_url(lab.name)}),
                "KubeSpawner": {
                    # The chart sets `c.KubeSpawner.namespace` from POD_NAMESPACE (the release's, `<lab>-hub`) and
                    # loads `hub.config` after it, which wins (jupyterhub_config.py @ 4.4.0, "load hub.config").
                    "namespace": lab.name,
                    # Notebooks meet Pod Security `restricted` (the chart maps no values to these two traits).
                    "pod_security_context": NOTEBOOK_POD_SECURITY,
                    "container_security_context": NOTEBOOK_CONTAINER_SECURITY,
                },
            },
            # SQLite never on the EFS homes (NFS): a block volume of its own, or memory when the operator asks.
            "db": db_values(hub),
            "nodeSelector": _system_nodes(),
            "networkPolicy": _network_policy(egress=cross["hub_egress"], ingress=cross["hub_ingress"]),
        },
        "proxy": {
            "service": proxy_service(hub),
            "https": {"enabled": hub.certificate_arn is not None, "type": "offload"},
            "chp": {"nodeSelector": _system_nodes(), "networkPolicy": _network_policy(egress=cross["proxy_egress"])},
        },
        "singleuser": {
            "image": {"name": image_name, "tag": image_tag, "pullPolicy": "IfNotPresent"},
            "uid": NOTEBOOK_UID,
            "fsGid": NOTEBOOK_FS_GID,
            "startTimeout": SPAWN_TIMEOUT_SECONDS,
            # The chart's blocker is a root init container with NET_ADMIN, which `restricted` refuses. IMDSv2 with
            # hop limit 1 on every node and the lab's egress policy keep notebooks off the metadata server instead.
            "cloudMetadata": {"blockWithIptables": False},
            # Its policy lands in the release's namespace, where no notebook runs; the lab's side is
            # `hub_namespace.lab_side_policies`.
            "networkPolicy": {"enabled": False},
            "extraAnnotations": {
                DO_NOT_DISRUPT_ANNOTATION: "true",
                **checkov_skip_annotations(NOTEBOOK_CHECKOV_SKIPS),
            },
            # The learners' SQLite files (IPython history, file ids, signatures) off the EFS home (NFS).
            "extraFiles": notebook_sqlite_files(),
            "storage": {
                # The `files` volume on the lab's copy of the extraFiles Secret (the chart's is in `<lab>-hub`).
                "extraVolumes": {"files": files_volume()},
                "type": "dynamic",
                "homeMountPath": HOME_MOUNT_PATH,
                "dynamic": {"storageClass": storage_class, "storageAccessModes": ["ReadWriteMany"]},
            },
            "cpu": {"guarantee": cpu_cores(cpu.shape), "limit": cpu_cores(cpu.shape)},
            "memory": {"guarantee": memory_quantity(cpu.shape), "limit": memory_quantity(cpu.shape)},
            "profileList": profile_list(pools),
        },
        "scheduling": {
            # Karpenter packs GPU pods when it provisions and WhenEmpty consolidation removes empty nodes; a second
            # scheduler (kube-scheduler v1.30 in the chart) would only pack CPU requests, which GPU slots dominate.
            "userScheduler": {"enabled": False},
            "userPlaceholder": {"enabled": False},  # the pools' warm headroom (CapacityBuffer) keeps slots warm
            "podPriority": {"enabled": False},
            "corePods": {"tolerations": [], "nodeAffinity": {"matchNodePurpose": "ignore"}},
            "userPods": {"tolerations": [], "nodeAffinity": {"matchNodePurpose": "ignore"}},
        },
        # Image-puller DaemonSets cannot tolerate the GPU taint under the guard; node userData pre-pulls instead.
        "prePuller": {"hook": {"enabled": False}, "continuous": {"enabled": False}},
        "cull": {
            "enabled": True,
            "timeout": hub.idle_minutes * 60,
            "every": CULL_EVERY_SECONDS,
            "maxAge": hub.max_seconds,
            "users": False,
            "adminUsers": True,
            "removeNamedServers": False,
        },
    }


def _with_jupyterhub(config: Values, traits: Values) -> Values:
    """`hub.config` with `traits` added to its `JupyterHub` section (the authenticator's config may hold one)."""
    return {**config, "JupyterHub": {**config.get("JupyterHub", {}), **traits}}


def hub_images(labs: Sequence[LabSettings]) -> tuple[str, ...]:
    """Notebook images of every hub, for the GPU nodes' pre-pull list (sorted, once each)."""
    return tuple(sorted({image_reference(lab.hub) for lab in labs if lab.hub is not None}))
