"""The running program's settings: Pulumi's runtime config, read and checked by `components.settings`.

Kept apart from `settings.py` so the settings layer stays pure (no Pulumi import) for the synth,
the renderers and the tests; this is the one place the real `preview`/`up` reads its config.
"""

from __future__ import annotations

import pulumi
from pulumi.runtime import config as runtime_config

from components.settings import SettingsError, StackSettings, load_settings


def read_settings() -> StackSettings:
    """Settings of the running Pulumi program; a user mistake stops it with a clean message.

    The runtime sees every config key of the stack (`PULUMI_CONFIG`, any namespace), so a
    misspelled namespace is caught here as in the synth. `pulumi.RunError` is printed by the
    Pulumi language host without a traceback.
    """
    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    secrets = {*runtime_config.get_config_secret_keys_env(), *(k for k in raw if runtime_config.is_config_secret(k))}
    try:
        return load_settings({key: str(value) for key, value in raw.items()}, secrets)
    except SettingsError as exc:
        raise pulumi.RunError(exc.render()) from None
