"""The running program's settings: Pulumi's runtime config, read and checked by `components.settings`.

Kept apart from `settings.py` so the settings layer stays pure (no Pulumi import) for the synth,
the renderers and the tests; this is the one place the real `preview`/`up` reads its config.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import pulumi
from pulumi.runtime import config as runtime_config

from components.settings import SettingsError, StackSettings, load_settings

# Settings the offline synth validated from the stack file before it ran the program (`handed_over`), else None.
_HANDED_OVER: ContextVar[StackSettings | None] = ContextVar("handed_over", default=None)


def read_settings() -> StackSettings:
    """Settings of the running Pulumi program; a user mistake stops it with a clean message.

    The runtime sees every config key of the stack (`PULUMI_CONFIG`, any namespace), so a
    misspelled namespace is caught here as in the synth. `pulumi.RunError` is printed by the
    Pulumi language host without a traceback. Under the offline synth, the settings it already
    validated from the same config (`handed_over`): one synth, one validation.
    """
    settings = _HANDED_OVER.get()
    if settings is not None:
        return settings
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secrets = {*runtime_config.get_config_secret_keys_env(), *(k for k in raw if runtime_config.is_config_secret(k))}
    try:
        return load_settings({key: str(value) for key, value in raw.items()}, secrets)
    except SettingsError as exc:
        raise pulumi.RunError(exc.render()) from None


@contextmanager
def handed_over(settings: StackSettings) -> Iterator[None]:
    """Within: `read_settings` returns `settings`, which the caller validated from the config it installed."""
    token = _HANDED_OVER.set(settings)
    try:
        yield
    finally:
        _HANDED_OVER.reset(token)
