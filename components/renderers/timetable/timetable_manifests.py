"""The lab timetable's Kubernetes objects as plain dicts: per pool with sessions, CronJobs that set its CapacityBuffer's
`spec.replicas` at each change of the weekly step function, the ServiceAccount they run as and a Role that may only
`get`/`patch` that one buffer; plus the namespace they run in. Pure: no Pulumi import.

The CapacityBuffer API at the pinned Karpenter has no schedule (autoscaling.x-k8s.io/v1beta1, ../shared/schemas
karpenter v1.14.1: `replicas`, `limits`, `percentage`, `podTemplateRef`/`scalableRef`), so batch/v1 CronJobs with
`spec.timeZone` (stable since Kubernetes 1.27) patch it: daylight saving time is the CronJob controller's job.
Each CronJob sets an absolute value, so a rerun or a late run never adds twice.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final

from components.facts import timetable
from components.facts.constants import (
    KUBECTL_IMAGE,
    NODEPOOL_LABEL,
    OS_LABEL,
    PROJECT,
    SYSTEM_NODE_LABEL_KEY,
    SYSTEM_NODE_LABEL_VALUE,
    TIMETABLE_NAMESPACE,
)
from components.facts.pod_requests import TIMETABLE_JOB_REQUESTS, as_quantities
from components.renderers.karpenter.warm_headroom_manifests import (
    CAPACITY_BUFFER_API_VERSION,
    HEADROOM_NAMESPACE,
    headroom_name,
)
from components.renderers.labs.lab_manifests import DNS_PORTS, HTTPS_PORT
from components.renderers.manifest_helpers import checkov_skip_annotations, plain_manifest
from components.settings import KarpenterPool, NodePoolSettings

Manifest = dict[str, Any]

COMPONENT: Final = "lab-timetable"
CAPACITY_BUFFER_GROUP: Final = CAPACITY_BUFFER_API_VERSION.split("/")[0]
CAPACITY_BUFFER_RESOURCE: Final = "capacitybuffers"
# What the Role grants on the one buffer: read it, patch spec.replicas.
ROLE_VERBS: Final = ("get", "patch")
# CronJob names are capped at 52 characters (the controller appends an 11-character job suffix).
CRONJOB_NAME_MAX: Final = 52
# Above 10000 (no host account), as the distroless `nonroot` user.
TIMETABLE_UID: Final = 65532
# The fit model counts these (pod_requests.TIMETABLE_JOB).
CONTAINER_RESOURCES: Final = as_quantities(TIMETABLE_JOB_REQUESTS)
MAX_STARTING_DEADLINE_SECONDS: Final = 600
TIMETABLE_CHECKOV_SKIPS: Final = {
    "CKV_K8S_38": "kubectl patches a CapacityBuffer: it needs its service account token (Role: get/patch one buffer)",
    "CKV_K8S_15": "image pinned by digest: IfNotPresent pulls the same bytes",
}


def _labels(pool: str | None = None) -> dict[str, str]:
    labels = {"app.kubernetes.io/name": COMPONENT, "app.kubernetes.io/part-of": PROJECT}
    return {**labels, "app.kubernetes.io/instance": pool} if pool else labels


def service_account_name(pool: NodePoolSettings) -> str:
    return f"{pool.name}-timetable"


def role_name(pool: NodePoolSettings) -> str:
    return f"{pool.name}-timetable"


def cronjob_name(pool: NodePoolSettings, change: timetable.Change) -> str:
    """`<pool>-<hhmm>-to-<replicas>`, unique per pool; a long pool name is cut and keeps a hash of itself."""
    suffix = f"-{change.hour:02d}{change.minute:02d}-to-{change.replicas}"
    if len(pool.name) + len(suffix) <= CRONJOB_NAME_MAX:
        return pool.name + suffix
    digest = hashlib.sha256(pool.name.encode()).hexdigest()[:6]
    head = pool.name[: CRONJOB_NAME_MAX - len(suffix) - 7].rstrip("-")
    return f"{head}-{digest}{suffix}"


def namespace(kubernetes_version: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": TIMETABLE_NAMESPACE,
            "labels": {
                **_labels(),
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/enforce-version": f"v{kubernetes_version}",
            },
        },
    }


def network_policy() -> Manifest:
    """No ingress; egress only DNS and HTTPS (the EKS API endpoint)."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "timetable-egress-api-only", "namespace": TIMETABLE_NAMESPACE, "labels": _labels()},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Ingress", "Egress"],
            "egress": [{"ports": [dict(port) for port in DNS_PORTS]}, {"ports": [dict(HTTPS_PORT)]}],
        },
    }


def service_account(pool: NodePoolSettings) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": service_account_name(pool),
            "namespace": TIMETABLE_NAMESPACE,
            "labels": _labels(pool.name),
        },
        # Only the CronJob's pods mount a token (they opt in); nothing else in the namespace uses this account.
        "automountServiceAccountToken": False,
    }


def role(pool: NodePoolSettings) -> Manifest:
    """get/patch on exactly the pool's CapacityBuffer, in the buffer's namespace."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": role_name(pool), "namespace": HEADROOM_NAMESPACE, "labels": _labels(pool.name)},
        "rules": [
            {
                "apiGroups": [CAPACITY_BUFFER_GROUP],
                "resources": [CAPACITY_BUFFER_RESOURCE],
                "resourceNames": [headroom_name(pool)],
                "verbs": list(ROLE_VERBS),
            }
        ],
    }


def role_binding(pool: NodePoolSettings) -> Manifest:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": role_name(pool), "namespace": HEADROOM_NAMESPACE, "labels": _labels(pool.name)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role_name(pool)},
        "subjects": [{"kind": "ServiceAccount", "name": service_account_name(pool), "namespace": TIMETABLE_NAMESPACE}],
    }


def off_gpu_affinity() -> Manifest:
    """System nodes only, never a node Karpenter launched (the GPU pools): a CronJob never holds a GPU node."""
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": NODEPOOL_LABEL, "operator": "DoesNotExist"}]}]
            }
        }
    }


def patch_body(replicas: int) -> str:
    return json.dumps({"spec": {"replicas": replicas}}, separators=(",", ":"))


def starting_deadline_seconds(served: KarpenterPool) -> int:
    """A missed run may still start, but never after the pool's next change is due (at most 10 minutes)."""
    pool, sessions = served.settings, served.sessions
    gap = timetable.shortest_gap_minutes(pool.warm_gpu_slots, sessions, served.lead_minutes)
    return min(MAX_STARTING_DEADLINE_SECONDS, gap * 60 - 1)


def cronjob(served: KarpenterPool, change: timetable.Change) -> Manifest:
    """At `change.schedule` in the sessions' zone, set the pool's CapacityBuffer to `change.replicas`."""
    pool = served.settings
    (zone,) = {session.timezone for session in served.sessions}
    labels = _labels(pool.name)
    container = {
        "name": "set-buffer",
        "image": KUBECTL_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        # The image's ENTRYPOINT is /bin/kubectl.
        "args": [
            "patch",
            f"{CAPACITY_BUFFER_RESOURCE}.{CAPACITY_BUFFER_GROUP}",
            headroom_name(pool),
            f"--namespace={HEADROOM_NAMESPACE}",
            "--type=merge",
            f"--patch={patch_body(change.replicas)}",
        ],
        # kubectl keeps its discovery cache under $HOME: a small writable emptyDir, the root filesystem read-only.
        "env": [{"name": "HOME", "value": "/home/kubectl"}],
        "volumeMounts": [{"name": "home", "mountPath": "/home/kubectl"}],
        "resources": {"requests": dict(CONTAINER_RESOURCES), "limits": dict(CONTAINER_RESOURCES)},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }
    pod_spec = {
        "serviceAccountName": service_account_name(pool),
        "automountServiceAccountToken": True,
        "restartPolicy": "OnFailure",
        "nodeSelector": {OS_LABEL: "linux", SYSTEM_NODE_LABEL_KEY: SYSTEM_NODE_LABEL_VALUE},
        "affinity": off_gpu_affinity(),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": TIMETABLE_UID,
            "runAsGroup": TIMETABLE_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
        "volumes": [{"name": "home", "emptyDir": {"sizeLimit": "16Mi"}}],
    }
    return plain_manifest(
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {
                "name": cronjob_name(pool, change),
                "namespace": TIMETABLE_NAMESPACE,
                "labels": labels,
                "annotations": checkov_skip_annotations(TIMETABLE_CHECKOV_SKIPS),
            },
            "spec": {
                "schedule": change.schedule,
                "timeZone": zone,
                "concurrencyPolicy": "Forbid",
                "startingDeadlineSeconds": starting_deadline_seconds(served),
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "backoffLimit": 3,
                        "activeDeadlineSeconds": 300,
                        "ttlSecondsAfterFinished": 86400,
                        "template": {"metadata": {"labels": labels}, "spec": pod_spec},
                    },
                },
            },
        }
    )


def cronjobs(served: KarpenterPool) -> list[Manifest]:
    """One CronJob per change of the pool's weekly buffer profile (grouped by time of day and value)."""
    pool, sessions = served.settings, served.sessions
    lead = served.lead_minutes
    return [cronjob(served, change) for change in timetable.buffer_changes(pool.warm_gpu_slots, sessions, lead)]


def pool_objects(served: KarpenterPool) -> list[Manifest]:
    """ServiceAccount, Role, RoleBinding, then the CronJobs of one pool."""
    pool = served.settings
    return [service_account(pool), role(pool), role_binding(pool), *cronjobs(served)]


def budget_windows(sessions: Sequence[timetable.Session], lead_minutes: int) -> list[Manifest]:
    """NodePool budgets `nodes: "0"` covering each session of a pool (the resolved pool's `sessions`, lead time
    `lead_minutes`), in UTC under both offsets of its zone."""
    windows = [timetable.budget_window(session, lead_minutes) for session in sessions]
    return [{"nodes": "0", "schedule": w.schedule, "duration": w.duration} for w in windows]
