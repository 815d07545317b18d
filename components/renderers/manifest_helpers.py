"""Small pieces every rendered Kubernetes workload shares: checkov skip annotations, plain dict trees, config
checksums, a deny-all NetworkPolicy, and the two facts of a container the NVIDIA runtime injects GPUs into.

Pure: plain dicts in, plain dicts out. Used by the device plugin, the demo, DCGM exporter, warm headroom,
timetable and hub renderers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

Manifest = dict[str, Any]

# The NVIDIA runtime's createContainer hooks write into the root filesystem of every container it
# injects GPUs into (ld.so.cache, symlinks, application profiles); with a read-only root filesystem
# container creation fails (kserve#5711, nvidia-container-toolkit#2026). So GPU containers keep a
# writable root filesystem - a deliberate exception to read-only roots, nothing else writes there.
GPU_CONTAINER_READ_ONLY_ROOT = False
# The image's own ENV; repeated so the NVIDIA runtime injects every GPU into a pod that requests none.
NVIDIA_RUNTIME_ENV = [
    {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"},
]

CHECKOV_SKIP_ANNOTATION_PREFIX = "checkov.io/skip"


def checkov_skip_annotations(skips: Mapping[str, str]) -> dict[str, str]:
    """`checkov.io/skipN: <check>=<reason>` annotations; checkov reads them on the object, not its pod template."""
    return {
        f"{CHECKOV_SKIP_ANNOTATION_PREFIX}{number}": f"{check}={reason}"
        for number, (check, reason) in enumerate(skips.items(), start=1)
    }


def plain_manifest(manifest: Manifest) -> Manifest:
    """A tree of fresh dicts and lists: nothing shared within or across manifests (safe to mutate, no YAML aliases)."""
    plain: Manifest = json.loads(json.dumps(manifest))
    return plain


def config_checksum(config_text: str) -> str:
    return hashlib.sha256(config_text.encode()).hexdigest()


def deny_all_network_policy(workload: Manifest) -> Manifest:
    """A NetworkPolicy selecting exactly the workload's pods (its own selector) and allowing them no traffic.

    Both directions are listed with no rules, so nothing is allowed in or out: for pods that only talk to
    the kubelet over a unix socket, or not at all (images are pulled by the kubelet, not by the pod).
    """
    metadata = workload["metadata"]
    return plain_manifest(
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {
                "name": f"{metadata['name']}-deny-all",
                "namespace": metadata["namespace"],
                "labels": metadata["labels"],
            },
            "spec": {
                "podSelector": {"matchLabels": workload["spec"]["selector"]["matchLabels"]},
                "policyTypes": ["Ingress", "Egress"],
            },
        }
    )
