"""Pins the tests write by hand, not read from components.facts.constants: changing a pin has to change a test too."""

from __future__ import annotations

from typing import Final

# NVIDIA/k8s-device-plugin v0.20.0, pinned by the digest of its multi-arch index on nvcr.io.
PINNED_PLUGIN_IMAGE: Final = (
    "nvcr.io/nvidia/k8s-device-plugin:v0.20.0@sha256:a61ba9fd8efb82f3a79f877f7580e02c1e8e7593f62473644bc9c79e315c3312"
)
