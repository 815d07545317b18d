"""A pool's sharing kind and what one of its slots gets (docs/sharing-kinds.md).

Each pool has one sharing kind (time-slicing, mps, g6f or exclusive) with what one slot gets: its GPU memory
and what is isolated from the other slots (`SlotModel`). The resolved model (`ResolvedPool.slot_kind`,
`ResolvedPool.slot`) holds it per pool; the hub profiles, the summary, the NodeOverlays, the cost forecast and
the GPU-idle reaper read it there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from components.facts import gpu_catalog
from components.settings.gpu import GpuSharingSettings

SharingKind = Literal["time-slicing", "mps", "g6f", "exclusive"]
# An MPS client below this cap cannot load a CUDA context and a small model (the settings check's floor).
MPS_MIN_CLIENT_MIB: Final = 1024


def mps_client_cap_mib(gpu_memory_mib: int, replicas: int) -> int:
    """The MPS pinned-memory cap per client: the GPU's memory / replicas, in whole MiB.

    As the plugin's control daemon works it out (`fmt.Sprintf("%vM", totalMemory/replicas/1024/1024)` sent as
    `set_default_device_pinned_mem_limit <index> <limit>`): NVIDIA/k8s-device-plugin v0.20.0
    cmd/mps-control-daemon/mps/daemon.go, perDevicePinnedDeviceMemoryLimits.
    """
    return gpu_memory_mib // replicas


def sharing_kind(sharing: GpuSharingSettings, instance_types: Sequence[str]) -> SharingKind:
    """A pool's sharing kind: g6f where its types are g6f slices (the settings allow only strategy none there),
    else its strategy, `none` being exclusive."""
    if instance_types and all(gpu_catalog.is_fractional(t) for t in instance_types):
        return "g6f"
    return "exclusive" if sharing.strategy == "none" else sharing.strategy


@dataclass(frozen=True)
class Isolation:
    """What one slot keeps to itself. memory: no other slot can take its GPU memory (a cap or its own
    framebuffer); faults: another slot's fatal GPU fault does not end it; compute: its share of the GPU's
    cores is its own (not time-shared with, nor capped among, other processes on the same GPU)."""

    memory: bool
    faults: bool
    compute: bool

    def describe(self) -> str:
        parts = [("memory", self.memory), ("faults", self.faults), ("compute", self.compute)]
        fenced = [name for name, held in parts if held]
        shared = [name for name, held in parts if not held]
        return f"isolated: {', '.join(fenced) or 'none'}; shared: {', '.join(shared) or 'none'}"


def isolation_of(kind: SharingKind) -> Isolation:
    """Per kind (docs/sharing-kinds.md cites each): time-slicing fences nothing; MPS caps each client's memory,
    but a fatal fault ends every client of that GPU's MPS server and the SMs are shared (a thread-percentage cap
    only); a g6f slice has its own framebuffer and vGPU; an exclusive GPU is the pod's alone."""
    if kind == "time-slicing":
        return Isolation(memory=False, faults=False, compute=False)
    if kind == "mps":
        return Isolation(memory=True, faults=False, compute=False)
    return Isolation(memory=True, faults=True, compute=True)


@dataclass(frozen=True)
class SlotModel:
    """One slot of a pool: its kind, the GPU memory it gets (smallest over the pool's types) and its isolation.

    `memory_mib` is a fair share with time-slicing (nothing enforces it), the MPS client cap with mps, the
    slice's framebuffer on g6f and the whole GPU exclusive.
    """

    kind: SharingKind
    memory_mib: int
    replicas: int
    isolation: Isolation

    @property
    def per_process_gpu_samples(self) -> bool:
        """Whether DCGM's per-process GPU samples show one slot's use: not under MPS (the server holds the
        context) nor on a g6f guest (vGPU); a reaper must report "unknown" there and never reclaim."""
        return self.kind in ("time-slicing", "exclusive")
