"""A lab's JupyterHub as plain data: the zero-to-jupyterhub 4.4.0 chart values and the notebook Pods it spawns.

Pure renderers (settings in, dicts out). The hub runs in the lab's own namespace, so the lab's quota,
LimitRange, NetworkPolicies, Pod Security `restricted` and the GPU guard apply to every notebook unchanged.

- Profiles are generated, never typed: one per Karpenter pool the hub offers (`hub.pools`, default all), each
  requesting exactly one shared `nvidia.com/gpu` slot, tolerating the GPU taint, pinned to its pool by
  `karpenter.sh/nodepool` and sized like the pool's warm slot (`StackSettings.warm_slot_shape_for`: one slot's
  share of the pool's smallest node after system reservations, the math the warm headroom uses), so a notebook
  lands exactly where a CapacityBuffer kept room. Plus one small CPU-only profile.
- `notebook_pod` renders the Pod kubespawner 7.0.0 builds (`KubeSpawner.get_pod_manifest` -> `objects.make_pod`)
  from the traits the chart's `jupyterhub/files/hub/jupyterhub_config.py` @ 4.4.0 sets from these values;
  tests/test_hub.py proves the two equal by running kubespawner itself. Left out: the per-user variables the
  hub adds at spawn time (`JUPYTERHUB_*`, among them the user's API token, and the hub process's `env_keep`).
- The load balancer: the EKS cloud provider's Service annotations (kubernetes/cloud-provider-aws
  pkg/providers/v1/aws.go: `aws-load-balancer-type: nlb`, `-ssl-cert`, `-ssl-ports`, `-ssl-negotiation-policy`,
  `-backend-protocol`, `-internal`; TLS listeners with a security policy in pkg/providers/v1/aws_loadbalancer.go
  @ v1.35.2). Chosen over the AWS Load Balancer Controller: the built-in controller already runs in every EKS
  control plane, so nothing more is installed, upgraded or granted IAM rights; one NLB with an ACM certificate is
  all a hub needs (no path routing, no WAF). The chart's `proxy.https.type: offload` sends port 443 to the
  proxy's plain port and `disableHttpPort` removes port 80: nothing is served in clear text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final

from components import gpu_catalog
from components.constants import (
    DO_NOT_DISRUPT_ANNOTATION,
    GPU_RESOURCE,
    GPU_TOLERATION,
    JUPYTERHUB_CHART,
    JUPYTERHUB_CHART_VERSION,
    JUPYTERHUB_VERSION,
    KUBESPAWNER_VERSION,
    NODEPOOL_LABEL,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
)
from components.renderers.manifest_helpers import checkov_skip_annotations
from components.settings import (
    GithubAuth,
    HubSettings,
    LabSettings,
    NodePoolSettings,
    OidcAuth,
    SharedPasswordAuth,
    StackSettings,
    WarmSlotShape,
)

Values = dict[str, Any]
Manifest = dict[str, Any]

# The Helm release name (the chart names its objects after it: `hub`, `proxy`, `proxy-public`, ...).
HUB_RELEASE: Final = "jupyterhub"
# The user whose Pod the synth writes per profile (manifests/pod-<lab>-notebook-<profile>.yaml).
EXAMPLE_LEARNER: Final = "learner"
CPU_PROFILE: Final = "cpu"
# The CPU-only profile: small, for reading and preparing notebooks on the system nodes.
CPU_PROFILE_SHAPE: Final = WarmSlotShape(cpu_millicores=500, memory_mib=2048)
# jupyter/docker-stacks images run as jovyan (uid 1000, group users = 100) with its home and conda owned so.
NOTEBOOK_UID: Final = 1000
NOTEBOOK_FS_GID: Final = 100
HOME_MOUNT_PATH: Final = "/home/jovyan"
NOTEBOOK_PORT: Final = 8888
# Karpenter provisioning a GPU node (~2 min) plus a first pull of a multi-GB CUDA image on a cold node.
SPAWN_TIMEOUT_SECONDS: Final = 900
CULL_EVERY_SECONDS: Final = 60
# The NLB's TLS listener policy: TLS 1.3 and 1.2 only (Elastic Load Balancing security policies).
TLS_POLICY: Final = "ELBSecurityPolicy-TLS13-1-2-2021-06"
LB_ANNOTATION: Final = "service.beta.kubernetes.io/aws-load-balancer-"

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


@dataclass(frozen=True)
class Profile:
    """One choice on the hub's spawn page."""

    slug: str
    display_name: str
    description: str
    shape: WarmSlotShape
    pool: str | None  # the Karpenter pool of a GPU profile; None for the CPU profile

    @property
    def gpu(self) -> bool:
        return self.pool is not None


def _gpu_names(pool: NodePoolSettings) -> str:
    models = dict.fromkeys(gpu_catalog.gpu_model(t) for t in pool.selected_instance_types)
    return "/".join(model.name.upper() for model in models)


def _gpu_memory_gib(pool: NodePoolSettings) -> int:
    return min(gpu_catalog.gpu_model(t).memory_mib for t in pool.selected_instance_types) // 1024


def gpu_profile(settings: StackSettings, pool: NodePoolSettings) -> Profile:
    sharing = settings.sharing_for(pool)
    gpus, memory = _gpu_names(pool), _gpu_memory_gib(pool)
    shape = settings.warm_slot_shape_for(pool)
    if sharing.strategy == "none":
        name = f"Whole {gpus} — {memory} GB GPU memory"
    else:
        kind = "time-slices" if sharing.strategy == "time-slicing" else "MPS shares"
        others = sharing.replicas - 1
        name = (
            f"Shared {gpus} — 1 of {sharing.replicas} {kind}, about {memory // sharing.replicas} GB GPU memory "
            f"shared with {others} other{'s' if others != 1 else ''}"
        )
    description = f"{shape.cpu_millicores / 1000:g} CPU, {shape.memory_mib // 1024} GiB RAM, pool {pool.name}"
    return Profile(f"gpu-{pool.name}", name, description, shape, pool.name)


def cpu_profile() -> Profile:
    shape = CPU_PROFILE_SHAPE
    description = f"{shape.cpu_millicores / 1000:g} CPU, {shape.memory_mib // 1024} GiB RAM, no GPU"
    return Profile(CPU_PROFILE, "CPU only — no GPU", description, shape, None)


def profiles(settings: StackSettings, hub: HubSettings) -> tuple[Profile, ...]:
    """The GPU profiles (one per pool the hub offers, in config order), then the CPU profile."""
    return (*(gpu_profile(settings, pool) for pool in settings.hub_pools(hub)), cpu_profile())


def _memory(shape: WarmSlotShape) -> str:
    return f"{shape.memory_mib}M"  # kubespawner's ByteSpecification: M = MiB


def _cores(shape: WarmSlotShape) -> float:
    return shape.cpu_millicores / 1000


def _override(profile: Profile) -> Values:
    """kubespawner traits of one profile: requests = limits (the slot is sized exactly), GPU placement."""
    override: Values = {
        "cpu_guarantee": _cores(profile.shape),
        "cpu_limit": _cores(profile.shape),
        "mem_guarantee": _memory(profile.shape),
        "mem_limit": _memory(profile.shape),
    }
    if profile.pool is not None:
        override |= {
            "extra_resource_guarantees": {GPU_RESOURCE: "1"},
            "extra_resource_limits": {GPU_RESOURCE: "1"},
            "tolerations": [dict(GPU_TOLERATION)],
            "node_selector": {NODEPOOL_LABEL: profile.pool},
        }
    else:
        override["node_selector"] = {SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE}
    return override


def profile_list(settings: StackSettings, hub: HubSettings) -> list[Values]:
    """`singleuser.profileList`: the first GPU profile is the default."""
    return [
        {
            "display_name": p.display_name,
            "slug": p.slug,
            "description": p.description,
            **({"default": True} if index == 0 else {}),
            "kubespawner_override": _override(p),
        }
        for index, p in enumerate(profiles(settings, hub))
    ]


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


def _authenticator(hub: HubSettings) -> Values:
    """`hub.config` sections: the authenticator class and its settings (secrets stay in the chart's Secret)."""
    auth = hub.auth
    admins = {"admin_users": list(hub.admin_users)} if hub.admin_users else {}
    callback = {"oauth_callback_url": f"https://{hub.hostname}/hub/oauth_callback"}
    if isinstance(auth, SharedPasswordAuth):
        shared: Values = {"user_password": auth.password}
        if auth.admin_password is not None:
            shared["admin_password"] = auth.admin_password
        return {
            "JupyterHub": {"authenticator_class": "shared-password"},
            "Authenticator": {"allow_all": True, **admins},
            "SharedPasswordAuthenticator": shared,
        }
    if isinstance(auth, GithubAuth):
        return {
            "JupyterHub": {"authenticator_class": "github"},
            "Authenticator": admins,
            "GitHubOAuthenticator": {
                "client_id": auth.client_id,
                "client_secret": auth.client_secret,
                "allowed_organizations": list(auth.allowed_organizations),
                "scope": ["read:org"],
                **callback,
            },
        }
    assert isinstance(auth, OidcAuth)
    return {
        "JupyterHub": {"authenticator_class": "generic-oauth"},
        "Authenticator": admins,
        "GenericOAuthenticator": {
            "client_id": auth.client_id,
            "client_secret": auth.client_secret,
            "authorize_url": auth.authorize_url,
            "token_url": auth.token_url,
            "userdata_url": auth.userdata_url,
            "username_claim": auth.username_claim,
            "auth_state_groups_key": f"oauth_user.{auth.groups_claim}",
            "allowed_groups": list(auth.allowed_groups),
            "scope": ["openid", "email", "profile"],
            **callback,
        },
    }


def proxy_service(hub: HubSettings) -> Values:
    """`proxy.service`: an NLB from the EKS cloud provider; TLS with the ACM certificate on port 443 only."""
    annotations = {f"{LB_ANNOTATION}type": "nlb"}
    if hub.internal:
        annotations[f"{LB_ANNOTATION}internal"] = "true"
    if hub.certificate_arn is not None:
        annotations |= {
            f"{LB_ANNOTATION}ssl-cert": hub.certificate_arn,
            f"{LB_ANNOTATION}ssl-ports": "https",
            f"{LB_ANNOTATION}ssl-negotiation-policy": TLS_POLICY,
            f"{LB_ANNOTATION}backend-protocol": "tcp",
        }
    return {"type": "LoadBalancer", "annotations": annotations, "disableHttpPort": hub.certificate_arn is not None}


def _system_nodes() -> Values:
    return {SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE}


def chart_values(settings: StackSettings, lab: LabSettings, storage_class: str) -> Values:
    """This program's values for the lab's chart (Helm deep-merges them over the chart's defaults)."""
    hub = lab.hub
    assert hub is not None
    image_name, image_tag = image_parts(hub.image)
    cpu = cpu_profile()
    return {
        "hub": {
            "config": {
                **_authenticator(hub),
                # Notebooks meet Pod Security `restricted` (the chart maps no values to these two traits).
                "KubeSpawner": {
                    "pod_security_context": NOTEBOOK_POD_SECURITY,
                    "container_security_context": NOTEBOOK_CONTAINER_SECURITY,
                },
            },
            "db": {"pvc": {"storageClassName": storage_class}},
            "nodeSelector": _system_nodes(),
            "networkPolicy": {"egressAllowRules": dict(CHART_EGRESS_OFF)},
        },
        "proxy": {
            "service": proxy_service(hub),
            "https": {"enabled": hub.certificate_arn is not None, "type": "offload"},
            "chp": {"nodeSelector": _system_nodes(), "networkPolicy": {"egressAllowRules": dict(CHART_EGRESS_OFF)}},
        },
        "singleuser": {
            "image": {"name": image_name, "tag": image_tag, "pullPolicy": "IfNotPresent"},
            "uid": NOTEBOOK_UID,
            "fsGid": NOTEBOOK_FS_GID,
            "startTimeout": SPAWN_TIMEOUT_SECONDS,
            # The chart's blocker is a root init container with NET_ADMIN, which `restricted` refuses. IMDSv2 with
            # hop limit 1 on every node and the lab's egress policy keep notebooks off the metadata server instead.
            "cloudMetadata": {"blockWithIptables": False},
            "networkPolicy": {"egressAllowRules": dict(CHART_EGRESS_OFF)},
            "extraAnnotations": {
                DO_NOT_DISRUPT_ANNOTATION: "true",
                **checkov_skip_annotations(NOTEBOOK_CHECKOV_SKIPS),
            },
            "storage": {
                "type": "dynamic",
                "homeMountPath": HOME_MOUNT_PATH,
                "dynamic": {"storageClass": storage_class, "storageAccessModes": ["ReadWriteMany"]},
            },
            "cpu": {"guarantee": _cores(cpu.shape), "limit": _cores(cpu.shape)},
            "memory": {"guarantee": _memory(cpu.shape), "limit": _memory(cpu.shape)},
            "profileList": profile_list(settings, hub),
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


# --- the Pod kubespawner spawns ---------------------------------------------------------------------------


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
    override = _override(profile)
    requests: Values = {"cpu": override["cpu_guarantee"], "memory": profile.shape.memory_mib * 1024**2}
    limits: Values = {"cpu": override["cpu_limit"], "memory": profile.shape.memory_mib * 1024**2}
    if profile.gpu:
        requests[GPU_RESOURCE] = "1"
        limits[GPU_RESOURCE] = "1"
    return {"limits": limits, "requests": requests}


def _env(profile: Profile, image: str) -> list[dict[str, str]]:
    """What jupyterhub's Spawner.get_env and KubeSpawner.get_env set from configuration, sorted as make_pod sorts."""
    cores, memory = str(_cores(profile.shape)), str(profile.shape.memory_mib * 1024**2)
    env = {
        "CPU_GUARANTEE": cores,
        "CPU_LIMIT": cores,
        "JUPYTER_IMAGE": image,
        "JUPYTER_IMAGE_SPEC": image,
        "MEM_GUARANTEE": memory,
        "MEM_LIMIT": memory,
    }
    return [{"name": name, "value": value} for name, value in sorted(env.items())]


def notebook_pod(settings: StackSettings, lab: LabSettings, profile: Profile) -> Manifest:
    """The Pod the lab's hub spawns for `EXAMPLE_LEARNER` choosing `profile` (kubespawner 7.0.0 make_pod)."""
    hub = lab.hub
    assert hub is not None
    image = image_reference(hub)
    volume = f"volume-{EXAMPLE_LEARNER}"
    override = _override(profile)
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
                "volumeMounts": [{"mountPath": HOME_MOUNT_PATH, "name": volume}],
            }
        ],
        "imagePullSecrets": [],
        "nodeSelector": dict(override["node_selector"]),
        "restartPolicy": "OnFailure",
        "securityContext": {"fsGroup": NOTEBOOK_FS_GID, **NOTEBOOK_POD_SECURITY},
        "volumes": [{"name": volume, "persistentVolumeClaim": {"claimName": f"claim-{EXAMPLE_LEARNER}"}}],
    }
    if profile.gpu:
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


def notebook_pods(settings: StackSettings) -> dict[str, Manifest]:
    """`manifests/pod-<lab>-notebook-<profile>.yaml` -> the Pod, for every lab with a hub and every profile."""
    pods: dict[str, Manifest] = {}
    for lab in settings.labs:
        if lab.hub is not None:
            for profile in profiles(settings, lab.hub):
                pods[notebook_pod_file(lab, profile)] = notebook_pod(settings, lab, profile)
    return pods


def hub_images(settings: StackSettings) -> tuple[str, ...]:
    """Notebook images of every hub, for the GPU nodes' pre-pull list (sorted, once each)."""
    return tuple(sorted({image_reference(lab.hub) for lab in settings.labs if lab.hub is not None}))
