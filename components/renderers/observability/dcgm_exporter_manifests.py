"""The platform's dcgm-exporter: GPU metrics per node, per lab and per pod on shared GPUs, as plain manifests.

Pure: the observability section in, dicts out. Why the platform runs its own exporter instead of the
CloudWatch add-on's (docs/gpu-health.md has the whole argument):

- **One DCGM host engine per GPU node.** With node repair on, the node monitoring agent's `dcgm-server`
  runs `nv-hostengine` (aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/templates/
  dcgm-daemonset.yaml @ v1.6.6) and the agent's NVIDIA monitor needs it (monitors/nvidia/dcgm/dcgm_client.go
  @ v1.6.6: Standalone mode at `localhost:5555`; without an engine it reports `DCGMError`, severity Fatal).
  The add-on's exporter starts an engine of its own, and chart 6.4.0 offers no value to point it at a remote
  engine (templates/linux/dcgm-exporter-daemonset.yaml: fixed `env`, no args, no extra env). So the add-on's
  exporter is switched off (`dcgmExporter.enabled: false`) and this one connects to the agent's engine
  (`--remote-hostengine-info`, NVIDIA/dcgm-exporter pkg/cmd/app.go @ 4.5.3-4.8.2). Without node repair
  nothing else runs an engine, and this exporter runs its own (embedded mode, the exporter's default).
- **Per-pod use on time-sliced GPUs.** `KUBERNETES_VIRTUAL_GPUS` (with `DCGM_EXPORTER_KUBERNETES`) makes the
  exporter read per-process utilisation and memory through NVML, map each PID to its pod through
  `/proc/<pid>/cgroup` (hence `hostPID`) and the pod's UID (a pod informer on this node, hence the read-only
  RBAC), and label `DCGM_FI_DEV_GPU_UTIL` / `DCGM_FI_DEV_FB_USED` per pod (NVIDIA/dcgm-exporter#594,
  internal/pkg/transformation/{process_metrics,pidmapper,kubernetes}.go @ 4.5.3-4.8.2).
- **Into CloudWatch unchanged.** The Container Insights agent scrapes, over HTTPS, every Service in its own
  namespace labelled `k8s-app=dcgm-exporter-service` (open-telemetry-collector-contrib receiver/
  awscontainerinsightreceiver/internal/gpu `GetScraperConfig`: CA
  `/etc/amazon-cloudwatch-observability-agent-cert/tls-ca.crt`), and turns the `pod`/`namespace` labels into
  `pod_gpu_*` metrics. The add-on's agent certificate names `dcgm-exporter-service` and
  `dcgm-exporter-service.amazon-cloudwatch.svc` (templates/linux/cloudwatch-agent-custom-resource.yaml @
  amazon-cloudwatch-observability-6.4.0, secret `amazon-cloudwatch-observability-agent-cert`), so the
  Service keeps that name and the exporter serves TLS with that secret, as the chart's own exporter does.
"""

from __future__ import annotations

from typing import Any, Final

from components.facts.constants import (
    CLOUDWATCH_AGENT_NAMESPACE,
    DCGM_EXPORTER_IMAGE,
    DCGM_EXPORTER_NAME,
    DCGM_HOSTENGINE_PORT,
    GPU_LABEL_KEY,
    GPU_LABEL_VALUE,
    GPU_TOLERATION,
    PROJECT,
)
from components.facts.node_allocatable import DCGM_EXPORTER
from components.facts.node_monitoring import CLOUDWATCH_GPU_COUNTERS
from components.renderers.manifest_helpers import (
    GPU_CONTAINER_READ_ONLY_ROOT,
    NVIDIA_RUNTIME_ENV,
    checkov_skip_annotations,
    config_checksum,
    plain_manifest,
)
from components.settings import ObservabilitySettings

Manifest = dict[str, Any]

NAMESPACE: Final = CLOUDWATCH_AGENT_NAMESPACE
# The agent finds the exporter by this Service name and label (see the module docstring).
SERVICE_NAME: Final = "dcgm-exporter-service"
SERVICE_LABEL: Final = {"k8s-app": SERVICE_NAME}
METRICS_PORT: Final = 9400
AGENT_CERT_SECRET: Final = "amazon-cloudwatch-observability-agent-cert"
CONFIG_DIR: Final = "/etc/dcgm-exporter/platform"
TLS_DIR: Final = "/etc/dcgm-exporter/tls"
POD_RESOURCES_DIR: Final = "/var/lib/kubelet/pod-resources"
# prometheus/exporter-toolkit web configuration (the exporter's --web-config-file), as the chart's tlsConfig.
WEB_CONFIG: Final = f"tls_server_config:\n  cert_file: {TLS_DIR}/tls.crt\n  key_file: {TLS_DIR}/tls.key\n"
REMOTE_HOSTENGINE_FLAG: Final = "--remote-hostengine-info"

EXPORTER_CHECKOV_SKIPS: Final = {
    "CKV_K8S_17": "hostPID: maps each GPU process to its pod through /proc/PID/cgroup (dcgm-exporter#594)",
    "CKV_K8S_23": "runs as root to reach the root-owned kubelet pod-resources socket",
    "CKV_K8S_40": "runs as UID 0 for the same root-owned kubelet pod-resources socket",
    "CKV_K8S_22": "GPU container: NVIDIA runtime hooks write into its root filesystem (nvidia-container-toolkit#2026)",
    "CKV_K8S_15": "pinned image stays IfNotPresent so a restart never depends on the registry",
    "CKV_K8S_38": "reads the pods of its node (read-only informer) to map each GPU process to its pod UID",
    "CKV_K8S_43": "digest of the 4.5.3-4.8.2 tag not readable offline; the release tag is pinned (docs/gpu-health.md)",
}


def uses_remote_hostengine(observability: ObservabilitySettings) -> bool:
    """True when the node monitoring agent's nv-hostengine is on every GPU node (node repair on)."""
    return observability.node_repair


def counters_csv() -> str:
    return "".join(f"{field}, {kind}, {help_text}\n" for field, kind, help_text in CLOUDWATCH_GPU_COUNTERS)


def _labels() -> dict[str, str]:
    return {
        "app.kubernetes.io/name": DCGM_EXPORTER_NAME,
        "app.kubernetes.io/component": "gpu-metrics",
        "app.kubernetes.io/part-of": PROJECT,
    }


def _metadata(name: str, *, namespaced: bool = True, **extra: Any) -> Manifest:
    metadata: Manifest = {"name": name, "labels": _labels(), **extra}
    if namespaced:
        metadata["namespace"] = NAMESPACE
    return metadata


def config_map() -> Manifest:
    return plain_manifest(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _metadata(DCGM_EXPORTER_NAME),
            "data": {"counters.csv": counters_csv(), "web-config.yaml": WEB_CONFIG},
        }
    )


def service_account() -> Manifest:
    return plain_manifest({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(DCGM_EXPORTER_NAME)})


def cluster_role() -> Manifest:
    """Read pods: the exporter's pod informer (this node's pods) gives each pod's UID for the PID mapping."""
    return plain_manifest(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": _metadata(DCGM_EXPORTER_NAME, namespaced=False),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        }
    )


def cluster_role_binding() -> Manifest:
    return plain_manifest(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _metadata(DCGM_EXPORTER_NAME, namespaced=False),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": DCGM_EXPORTER_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": DCGM_EXPORTER_NAME, "namespace": NAMESPACE}],
        }
    )


def exporter_args(observability: ObservabilitySettings) -> list[str]:
    args = [f"--collectors={CONFIG_DIR}/counters.csv", f"--web-config-file={CONFIG_DIR}/web-config.yaml"]
    if uses_remote_hostengine(observability):
        # The agent's dcgm-server publishes nv-hostengine on the node's port 5555 (hostPort).
        args.append(f"{REMOTE_HOSTENGINE_FLAG}=$(NODE_IP):{DCGM_HOSTENGINE_PORT}")
    return args


def _container(observability: ObservabilitySettings) -> Manifest:
    remote = uses_remote_hostengine(observability)
    # Embedded mode runs the engine in this container: profiling fields (DCGM_FI_PROF_*) need SYS_ADMIN there
    # (NVIDIA/dcgm-exporter docker/Dockerfile @ 4.5.3-4.8.2, "Security Note"). A remote engine does that itself.
    capabilities: Manifest = {"drop": ["ALL"], **({} if remote else {"add": ["SYS_ADMIN"]})}
    return {
        "name": "exporter",
        "image": DCGM_EXPORTER_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": exporter_args(observability),
        "env": [
            {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
            {"name": "KUBERNETES_VIRTUAL_GPUS", "value": "true"},
            {"name": "DCGM_EXPORTER_LISTEN", "value": f":{METRICS_PORT}"},
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
            *NVIDIA_RUNTIME_ENV,
        ],
        "ports": [{"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"}],
        "securityContext": {
            "runAsUser": 0,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": GPU_CONTAINER_READ_ONLY_ROOT,
            "capabilities": capabilities,
        },
        "resources": {
            "requests": {"cpu": f"{DCGM_EXPORTER.cpu_millicores}m", "memory": f"{DCGM_EXPORTER.memory_mib}Mi"},
            # The add-on chart's limits (values.yaml dcgmExporter.resources @ 6.4.0).
            "limits": {"cpu": "500m", "memory": "750Mi"},
        },
        "livenessProbe": {"tcpSocket": {"port": METRICS_PORT}, "initialDelaySeconds": 45, "periodSeconds": 30},
        "readinessProbe": {"tcpSocket": {"port": METRICS_PORT}, "periodSeconds": 15},
        "volumeMounts": [
            {"name": "pod-gpu-resources", "mountPath": POD_RESOURCES_DIR, "readOnly": True},
            {"name": "config", "mountPath": CONFIG_DIR, "readOnly": True},
            {"name": "tls", "mountPath": TLS_DIR, "readOnly": True},
        ],
    }


def daemon_set(observability: ObservabilitySettings) -> Manifest:
    config_text = counters_csv() + WEB_CONFIG + " ".join(exporter_args(observability))
    selector = {"app.kubernetes.io/name": DCGM_EXPORTER_NAME}
    tls_items = [{"key": "tls.crt", "path": "tls.crt"}, {"key": "tls.key", "path": "tls.key"}]
    return plain_manifest(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": _metadata(DCGM_EXPORTER_NAME, annotations=checkov_skip_annotations(EXPORTER_CHECKOV_SKIPS)),
            "spec": {
                "selector": {"matchLabels": selector},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                "template": {
                    "metadata": {"labels": _labels(), "annotations": {"checksum/config": config_checksum(config_text)}},
                    "spec": {
                        "serviceAccountName": DCGM_EXPORTER_NAME,
                        "automountServiceAccountToken": True,
                        "enableServiceLinks": False,
                        "priorityClassName": "system-node-critical",
                        "hostPID": True,
                        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                        "nodeSelector": {GPU_LABEL_KEY: GPU_LABEL_VALUE},
                        "tolerations": [dict(GPU_TOLERATION)],
                        "containers": [_container(observability)],
                        "volumes": [
                            {"name": "pod-gpu-resources", "hostPath": {"path": POD_RESOURCES_DIR, "type": "Directory"}},
                            {"name": "config", "configMap": {"name": DCGM_EXPORTER_NAME}},
                            {"name": "tls", "secret": {"secretName": AGENT_CERT_SECRET, "items": tls_items}},
                        ],
                    },
                },
            },
        }
    )


def service() -> Manifest:
    """The Service the agent scrapes; `Local`: the agent on a node reaches that node's exporter."""
    return plain_manifest(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE_NAME, "namespace": NAMESPACE, "labels": {**_labels(), **SERVICE_LABEL}},
            "spec": {
                "type": "ClusterIP",
                "internalTrafficPolicy": "Local",
                "selector": {"app.kubernetes.io/name": DCGM_EXPORTER_NAME},
                "ports": [{"name": "metrics", "port": METRICS_PORT, "targetPort": "metrics", "protocol": "TCP"}],
            },
        }
    )


def network_policy() -> Manifest:
    """What the exporter's pods may talk to: the agent scraping :9400; the engine (:5555) and the API server (:443).

    The CloudWatch agent and the kubelet's probes come from the node's address, which no pod selector matches,
    so ingress is by port only (TLS, signed by the add-on's CA, serves it). Egress: the node monitoring agent's
    nv-hostengine on the node's port 5555, and the Kubernetes API (the pod informer) on 443.
    """
    return plain_manifest(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": _metadata(DCGM_EXPORTER_NAME),
            "spec": {
                "podSelector": {"matchLabels": {"app.kubernetes.io/name": DCGM_EXPORTER_NAME}},
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"ports": [{"protocol": "TCP", "port": METRICS_PORT}]}],
                "egress": [
                    {"ports": [{"protocol": "TCP", "port": DCGM_HOSTENGINE_PORT}]},
                    {"ports": [{"protocol": "TCP", "port": 443}]},
                ],
            },
        }
    )


def exporter_objects(observability: ObservabilitySettings) -> list[Manifest]:
    """Every object of the exporter, in creation order (RBAC, config and its NetworkPolicy before the pods)."""
    return [
        service_account(),
        cluster_role(),
        cluster_role_binding(),
        config_map(),
        network_policy(),
        daemon_set(observability),
        service(),
    ]
