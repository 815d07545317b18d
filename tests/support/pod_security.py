"""The Pod Security Standards' `restricted` profile as checks on a pod spec (shared test helper).

Rules from kubernetes.io "Pod Security Standards" (the baseline controls, then the restricted ones), as the
PodSecurity admission plugin applies them to a pod in a namespace labelled `enforce: restricted`.
"""

from __future__ import annotations

from typing import Any

RESTRICTED_VOLUME_TYPES = frozenset(
    {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret"}
)
BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE", "SETFCAP",
     "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)  # fmt: skip
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


def restricted_problems(spec: dict[str, Any]) -> list[str]:
    """Every way `spec` (a PodSpec) breaks Pod Security `restricted`; empty when the pod is admitted."""
    problems = [f"spec.{host}" for host in ("hostNetwork", "hostPID", "hostIPC") if spec.get(host)]
    pod_context = spec.get("securityContext") or {}
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUME_TYPES:
            problems.append(f"volume {volume['name']}: type {sorted(kinds)} not allowed")
    if pod_context.get("runAsUser") == 0:
        problems.append("pod runAsUser 0")
    pod_seccomp = (pod_context.get("seccompProfile") or {}).get("type")
    if pod_seccomp == "Unconfined":
        problems.append("pod seccompProfile Unconfined")
    for kind in CONTAINER_LISTS:
        for container in spec.get(kind) or []:
            problems += [f"{container['name']}: {p}" for p in _container_problems(container, pod_context, pod_seccomp)]
    return problems


def _container_problems(container: dict[str, Any], pod_context: dict[str, Any], pod_seccomp: str | None) -> list[str]:
    context = container.get("securityContext") or {}
    problems = []
    if context.get("privileged"):
        problems.append("privileged")
    if context.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation must be false")
    if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot")):
        problems.append("runAsNonRoot must be true (pod or container)")
    if context.get("runAsUser") == 0:
        problems.append("runAsUser 0")
    seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
    if seccomp not in ("RuntimeDefault", "Localhost"):
        problems.append(f"seccompProfile {seccomp!r} (RuntimeDefault or Localhost, pod or container)")
    capabilities = context.get("capabilities") or {}
    if "ALL" not in (capabilities.get("drop") or []):
        problems.append("capabilities must drop ALL")
    if set(capabilities.get("add") or []) - {"NET_BIND_SERVICE"}:
        problems.append(f"capabilities add {capabilities['add']} (only NET_BIND_SERVICE)")
    if any(port.get("hostPort") for port in container.get("ports") or []):
        problems.append("hostPort")
    return problems
