"""`labs[].hub.gpuIdle`: the GPU idle reaper beside a lab's hub (docs/jupyterhub.md, "Idle GPU slots")."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import Field, model_validator

from components.settings.fields import SettingsModel, matching

# JupyterHub group names: what its admin page and REST API accept, kept to a plain, portable subset.
_GROUP = r"[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}"


class HubGpuIdleSettings(SettingsModel):
    """Frees the GPU slot of a learner whose notebook holds it without using it, judged by per-pod GPU use."""

    enabled: bool = True
    """false: this lab's hub runs no GPU idle reaper (the browser-activity idle culler still runs)."""
    threshold_percent: Annotated[int, Field(ge=1, le=100)] = 5
    """A pod whose SM utilisation reaches above this in a window is busy (1-100 %)."""
    idle_minutes: Annotated[int, Field(ge=10, le=480)] = 30
    """Minutes of GPU idleness (two consecutive windows of half this) before the learner is warned (10-480)."""
    grace_minutes: Annotated[int, Field(ge=1, le=120)] = 10
    """Minutes between the warning and the stop; GPU use or a busy kernel in between withdraws it (1-120)."""
    never_used_minutes: Annotated[int, Field(ge=10, le=480)] = 45
    """Minutes after a server started before one that never ran a CUDA process counts as idle (10-480)."""
    exempt_group: Annotated[
        str, matching(_GROUP, "must be a JupyterHub group name: letters, digits, '.', '_', '-'")
    ] = "gpu-idle-exempt"
    """The hub group whose members keep their slot however idle; instructors add learners on the hub's admin page."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.never_used_minutes < self.idle_minutes // 2:
            raise ValueError("neverUsedMinutes: at least half of idleMinutes (one window)")
        return self
