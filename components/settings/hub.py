"""`labs[].hub`: a lab's JupyterHub, its login (shared password, GitHub, OIDC), its secrets and its GPU idle reaper
(`labs[].hub.gpuIdle`, docs/jupyterhub.md, "Idle GPU slots")."""

from __future__ import annotations

import re
from typing import Annotated, Literal, Self

from pydantic import AfterValidator, Field, model_validator

from components.settings.fields import DigestImage, DnsLabel, SettingsModel, matching

_ACM_CERTIFICATE_ARN = re.compile(r"^arn:aws(-[a-z]+)*:acm:([a-z0-9-]+):[0-9]{12}:certificate/[0-9a-f-]{36}$")
_HUB_USERNAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._@-]{0,63}$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([-a-z0-9]*[a-z0-9])?\.)+[a-z]{2,63}$")
# What a `secure:` value reads as when it cannot be decrypted (the offline synth): no length to check.
REDACTED_SECRET = "[secret]"
# JupyterHub 5.5.0 jupyterhub/authenticators/shared.py: _USER_PASSWORD_MIN_LENGTH, _ADMIN_PASSWORD_MIN_LENGTH.
SHARED_PASSWORD_MIN_LENGTH = 8
ADMIN_PASSWORD_MIN_LENGTH = 32


def _secret_of_length(minimum: int) -> AfterValidator:
    def check(value: str) -> str:
        if value != REDACTED_SECRET and len(value) < minimum:
            raise ValueError(f"must be at least {minimum} characters (JupyterHub refuses a shorter one)")
        return value

    return AfterValidator(check)


HubUsername = Annotated[
    str, matching(_HUB_USERNAME.pattern, "must be a JupyterHub username: letters, digits, '.', '_', '@', '-'")
]
Hostname = Annotated[str, matching(_HOSTNAME.pattern, "must be a lowercase DNS name like hub.example.org")]
HttpsUrl = Annotated[str, matching(r"https://[^\s]+", "must be an https:// URL")]


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


class SharedPasswordAuth(SettingsModel):
    """One password for every learner (JupyterHub 5's `shared-password` authenticator): one-off workshops."""

    type: Literal["sharedPassword"]
    password: Annotated[str, _secret_of_length(SHARED_PASSWORD_MIN_LENGTH)]
    """The learners' password; a `secure:` value of at least 8 characters."""
    admin_password: Annotated[str, _secret_of_length(ADMIN_PASSWORD_MIN_LENGTH)] | None = None
    """The password `hub.adminUsers` log in with (required with them); a `secure:` value of at least 32 characters."""


class GithubAuth(SettingsModel):
    """GitHub login (oauthenticator's `github`), limited to organisations or teams."""

    type: Literal["github"]
    client_id: Annotated[str, Field(min_length=1, max_length=128)]
    """The GitHub OAuth app's client ID."""
    client_secret: Annotated[str, Field(min_length=1)]
    """The GitHub OAuth app's client secret; a `secure:` value."""
    allowed_organizations: Annotated[
        list[Annotated[str, matching(r"[A-Za-z0-9-]+(:[A-Za-z0-9_.-]+)?", "must be 'org' or 'org:team-slug'")]],
        Field(min_length=1, max_length=50),
    ]
    """Who may log in: GitHub organisations (`org`) or teams (`org:team-slug`)."""


class OidcAuth(SettingsModel):
    """Generic OAuth2 / OpenID Connect login (oauthenticator's `generic-oauth`), e.g. Amazon Cognito."""

    type: Literal["oidc"]
    client_id: Annotated[str, Field(min_length=1, max_length=256)]
    """The identity provider app client's ID."""
    client_secret: Annotated[str, Field(min_length=1)]
    """The app client's secret; a `secure:` value."""
    authorize_url: HttpsUrl
    """The provider's authorization endpoint (https)."""
    token_url: HttpsUrl
    """The provider's token endpoint (https)."""
    userdata_url: HttpsUrl
    """The provider's userinfo endpoint (https)."""
    username_claim: Annotated[str, Field(min_length=1, max_length=64)] = "email"
    """The userinfo claim used as the JupyterHub username."""
    groups_claim: Annotated[str, Field(min_length=1, max_length=64)] = "groups"
    """The userinfo claim listing the user's groups."""
    allowed_groups: Annotated[list[Annotated[str, Field(min_length=1, max_length=128)]], Field(min_length=1)]
    """Who may log in: members of these provider groups."""


HubAuth = Annotated[SharedPasswordAuth | GithubAuth | OidcAuth, Field(discriminator="type")]
HUB_AUTH_TYPES = ("sharedPassword", "github", "oidc")
# Config paths (under `gpu-platform:labs[i].hub.auth`) that hold a secret, and only these.
HUB_SECRET_FIELDS = ("password", "adminPassword", "clientSecret")


class HubSettings(SettingsModel):
    """A lab's JupyterHub (zero-to-jupyterhub chart 4.4.0 in `<lab>-hub`, notebooks in the lab's namespace): off unless
    present."""

    auth: HubAuth
    """How learners log in: `type` sharedPassword, github or oidc (docs/jupyterhub.md)."""
    admin_users: Annotated[list[HubUsername], Field(max_length=50)] = []
    """JupyterHub usernames with hub admin rights (instructors)."""
    hostname: Hostname | None = None
    """The DNS name learners open (a CNAME to the load balancer); required for github and oidc login."""
    certificate_arn: Annotated[str, matching(_ACM_CERTIFICATE_ARN.pattern, "must be an ACM certificate ARN")] | None = (
        None
    )
    """ACM certificate for TLS on the load balancer, in the stack's region; required unless `internal`."""
    internal: bool = False
    """true: an internal load balancer (reachable from the VPC only) instead of an internet-facing one."""
    # Pinned by digest (the tag is for humans): what the hub spawns and every GPU node pre-pulls.
    image: DigestImage
    """The notebook image, pinned by digest; GPU nodes pre-pull it."""
    idle_minutes: Annotated[int, Field(ge=5, le=1440)] = 30
    """Minutes without activity after which a notebook is stopped and its GPU slot freed (5-1440)."""
    max_hours: Annotated[int, Field(ge=1, le=168)] = 8
    """Hours after which a notebook is stopped however busy (1-168)."""
    pools: Annotated[list[DnsLabel], Field(max_length=20)] | None = None
    """Karpenter node pools offered as GPU profiles; default: every pool."""
    database: Literal["sqliteVolume", "sqliteMemory"] = "sqliteVolume"
    """Where the hub keeps its SQLite database: `sqliteVolume`, an encrypted gp3 EBS volume of its own (the EBS CSI
    add-on; never the EFS home file system: SQLite must not live on NFS); `sqliteMemory`, in the hub's memory only:
    no volume, but every restart forgets users, tokens and running servers (a one-off demo)."""
    gpu_idle: HubGpuIdleSettings = HubGpuIdleSettings()
    """The GPU idle reaper: warns, then stops, a learner holding a GPU slot without using it (docs/jupyterhub.md)."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if not self.internal and self.certificate_arn is None:
            raise ValueError("certificateArn: required for an internet-facing hub (or set internal: true)")
        if self.auth.type in ("github", "oidc") and self.hostname is None:
            raise ValueError(f"hostname: required with auth.type {self.auth.type} (the OAuth callback URL)")
        if isinstance(self.auth, SharedPasswordAuth):
            if self.admin_users and self.auth.admin_password is None:
                raise ValueError("auth.adminPassword: required with adminUsers (JupyterHub's shared-password login)")
            if self.auth.admin_password is not None and not self.admin_users:
                raise ValueError("auth.adminPassword: set adminUsers too, or remove it")
            # JupyterHub 5.5.0 jupyterhub/authenticators/shared.py _validate_admin_password refuses it at start.
            if self.auth.admin_password == self.auth.password != REDACTED_SECRET:
                raise ValueError("auth.adminPassword: must differ from auth.password (JupyterHub refuses the same one)")
        repeated = sorted({u for u in self.admin_users if self.admin_users.count(u) > 1})
        if repeated:
            raise ValueError(f"adminUsers: each user once: {repeated}")
        if self.pools is not None:
            repeated = sorted({p for p in self.pools if self.pools.count(p) > 1})
            if repeated or not self.pools:
                raise ValueError(f"pools: at least one pool, each once (repeated: {repeated})")
        return self

    @property
    def max_seconds(self) -> int:
        return self.max_hours * 3600
