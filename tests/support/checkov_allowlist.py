"""checkov checks a Kubernetes object may skip, each with the reason it may (and only where it may).

An object skips a check with a `checkov.io/skipN` annotation naming the check and why; `tests/policy/test_security_linters.py`
fails on a skip of any check not listed here, and the demo and device-plugin tests keep their skips within it.
Anything else checkov finds must be fixed in the manifest.
"""

from __future__ import annotations

from typing import Final

# Only where the workload inherently cannot comply.
SKIPPABLE_CHECKS: Final[dict[str, str]] = {
    "CKV_K8S_8": "liveness probe: for containers without a network endpoint to probe",
    "CKV_K8S_9": "readiness probe: for pods that receive no Service traffic",
    "CKV_K8S_22": "read-only root filesystem: for GPU containers, whose NVIDIA runtime hooks write into it",
    "CKV_K8S_15": "imagePullPolicy Always: pinned images stay IfNotPresent so a restart never depends on a registry",
    "CKV_K8S_23": "root user: for node agents that must write into root-owned host directories",
    "CKV_K8S_40": "high UID: same node agents (they run as root)",
    "CKV_K8S_43": "image digest: for images chosen in stack config, where a pinned tag is accepted, and the GPU "
    "metrics exporter's release tag, whose digest could not be read offline (docs/gpu-health.md)",
    "CKV_K8S_17": "host PID namespace: for the GPU metrics exporter, which maps GPU processes to pods (dcgm-exporter#594)",
    "CKV_K8S_38": "service account token: for pods that call the Kubernetes API under a narrowly scoped role (the "
    "GPU metrics exporter's read-only pod informer, the timetable's patch of named CapacityBuffers)",
}
