"""The names of gpufit's environment variables, and whether an environment sets any of them.

:class:`bot.settings.Settings` takes its variable names from here: ``GPUFIT_<FIELD>`` for
gpufit's own settings (:data:`ENV_PREFIX`) and the names Slack and Redis users already know
for the rest (:data:`ENV_ALIASES`). This module imports no pydantic, so the CLI can learn that
nothing is configured (:func:`sets_any_setting`) without building :class:`Settings`: with
nothing set, the settings are the defaults. This module and ``bot/settings.py`` are the only
ones that read the environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["ENV_ALIASES", "ENV_PREFIX", "sets_any_setting"]

#: The prefix of gpufit's own variables: field ``port`` is ``GPUFIT_PORT``.
ENV_PREFIX = "GPUFIT_"

#: Settings field → the variable it is read from instead of ``GPUFIT_<FIELD>`` (ours: the
#: names Redis's and Slack's users already know).
ENV_ALIASES: dict[str, str] = {
    "redis_url": "REDIS_URL",
    "slack_bot_token": "SLACK_BOT_TOKEN",
    "slack_signing_secret": "SLACK_SIGNING_SECRET",
    "slack_app_token": "SLACK_APP_TOKEN",
    "slack_api_url": "SLACK_API_URL",
}


def sets_any_setting(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``environ`` (default: the process environment) sets a variable the settings
    could read: any ``GPUFIT_*`` variable, or one of :data:`ENV_ALIASES`.

    Names are compared ignoring case and an empty value counts as unset, as the settings read
    them. When this is false, ``Settings.from_env(environ)`` is ``Settings()``, the defaults.
    """
    environ = os.environ if environ is None else environ
    prefix = ENV_PREFIX.lower()
    aliases = {name.lower() for name in ENV_ALIASES.values()}
    return any(
        value != "" and (name.lower().startswith(prefix) or name.lower() in aliases)
        for name, value in environ.items()
    )
