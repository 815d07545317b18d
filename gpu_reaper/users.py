"""The hub's `GET /users` answer, seen from a notebook pod: whose pod it is, when it started, who is exempt.

Pod names are kubespawner's (jupyterhub-kubespawner 7.0.0, the version in the zero-to-jupyterhub 4.4.0 hub
image): `pod_name_template` `jupyter-{user_server}`, where a default server's `user_server` is
`safe_slug(username, max_length=48)` (kubespawner/spawner.py `_expand_user_properties`, slug scheme `safe`).
The reaper imports that function rather than copying it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubespawner.slugs import safe_slug

KUBESPAWNER_SLUG_MAX_LENGTH = 48


@dataclass(frozen=True)
class Learner:
    name: str
    admin: bool
    groups: frozenset[str]
    started_at: float | None
    running: bool
    profile: str | None = None  # the spawn-page profile the server was started with (KubeSpawner's user_options)


def pod_name(username: str) -> str:
    """The pod kubespawner creates for a user's default server."""
    return f"jupyter-{safe_slug(username, max_length=KUBESPAWNER_SLUG_MAX_LENGTH)}"


def _timestamp(value: Any) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def learners_by_pod(users: Iterable[Mapping[str, Any]]) -> dict[str, Learner]:
    """Pod name -> the learner whose default server it is (servers need the `read:servers` scope to show)."""
    result: dict[str, Learner] = {}
    for user in users:
        server = (user.get("servers") or {}).get("") or {}
        result[pod_name(str(user["name"]))] = Learner(
            name=str(user["name"]),
            admin=bool(user.get("admin")),
            groups=frozenset(user.get("groups") or ()),
            started_at=_timestamp(server.get("started")),
            running=bool(server) and bool(server.get("ready")) and not server.get("stopped", False),
            profile=(server.get("user_options") or {}).get("profile"),
        )
    return result


def is_exempt(learner: Learner | None, exempt_group: str) -> bool:
    """Hub admins and members of the instructors' exemption group keep their slot; pods of no user are left alone."""
    return learner is None or learner.admin or exempt_group in learner.groups
