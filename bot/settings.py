"""Every setting gpufit reads, read once from the environment into one validated object.

This is the only module that touches ``os.environ``; everything else receives a
:class:`Settings`. The README's settings table is checked against :data:`FIELDS` by a test.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from recommender import GpufitError

__all__ = [
    "ENV_NAMES",
    "TABLE_END",
    "TABLE_START",
    "Settings",
    "SettingsError",
    "settings_table_markdown",
]


class SettingsError(GpufitError):
    """A setting in the environment has an invalid value."""


class Settings(BaseModel):
    """gpufit's configuration. Field docs become the README settings table."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    redis_url: Annotated[
        str | None,
        Field(description="Redis server URL; unset starts an embedded Redis in the state dir."),
    ] = None
    state_dir: Annotated[
        Path | None,
        Field(description="Where the embedded Redis keeps its data (default: user state dir)."),
    ] = None
    feeds: Annotated[
        tuple[str, ...],
        Field(description="Comma-separated price sources (paths or http(s) URLs)."),
    ] = ()
    feed_timeout_s: Annotated[
        float, Field(gt=0, le=300, description="Read timeout for one feed fetch, seconds.")
    ] = 20.0
    refresh_interval_s: Annotated[
        int, Field(ge=60, description="How often the worker refreshes the feeds, seconds.")
    ] = 900
    # Why 1 s: a version read is a Redis round trip on every question (~0.1-0.3 ms of a
    # 2-4 ms answer, benchmarks.md); refreshes come every 15 minutes, so a second is unseen.
    price_recheck_s: Annotated[
        float,
        Field(
            ge=0,
            le=60,
            description=(
                "How long `gpufit serve` answers from the prices it holds before asking Redis "
                "whether a refresh moved them, seconds (0: on every question)."
            ),
        ),
    ] = 1.0
    slack_bot_token: Annotated[
        SecretStr | None, Field(description="Slack bot token (xoxb-...).")
    ] = None
    slack_signing_secret: Annotated[
        SecretStr | None, Field(description="Slack signing secret for HTTP mode.")
    ] = None
    slack_app_token: Annotated[
        SecretStr | None, Field(description="Slack app-level token (xapp-...) for Socket Mode.")
    ] = None
    slack_api_url: Annotated[
        str, Field(description="Slack Web API base URL (point at a fake Slack in tests).")
    ] = "https://slack.com/api/"
    host: Annotated[str, Field(description="HTTP bind address for `gpufit serve`.")] = "0.0.0.0"
    port: Annotated[int, Field(ge=1, le=65535, description="HTTP port for `gpufit serve`.")] = 3000
    log_level: Annotated[str, Field(description="Log level: DEBUG, INFO, WARNING, ERROR.")] = "INFO"
    log_format: Annotated[
        Literal["json", "text"],
        Field(description="Log format: `json` (one object per line, for containers) or `text`."),
    ] = "json"
    metrics_enabled: Annotated[
        bool, Field(description="Serve Prometheus metrics on `/metrics` (`true`/`false`).")
    ] = True
    metrics_port: Annotated[
        int,
        Field(
            ge=1,
            le=65535,
            description="Port of the worker's own `/metrics` and `/healthz` listener.",
        ),
    ] = 9090
    top: Annotated[int, Field(ge=1, le=20, description="Options shown per answer.")] = 5

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        value = value.upper()
        if value not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
            raise ValueError("must be DEBUG, INFO, WARNING or ERROR")
        return value

    @field_validator("feeds", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(part.strip() for part in value.split(",") if part.strip())
        return value

    def secret_values(self) -> tuple[str, ...]:
        """The configured secret values, for the log redaction filter (never log these).

        The Slack secrets, plus the password inside ``REDIS_URL`` when it carries one.
        """
        values = []
        for field_name in type(self).model_fields:
            value = getattr(self, field_name)
            if isinstance(value, SecretStr) and value.get_secret_value():
                values.append(value.get_secret_value())
        if self.redis_url:
            password = urlsplit(self.redis_url).password
            if password:
                values.append(password)
        return tuple(values)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every setting from ``environ`` (default: the process environment).

        Raises:
            SettingsError: a value is invalid; the message names the variable.
        """
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field_name, env_name in ENV_NAMES.items():
            raw = env.get(env_name)
            if raw is not None and raw != "":
                values[field_name] = raw
        try:
            return cls(**values)
        except ValidationError as exc:
            first = exc.errors()[0]
            field_name = str(first["loc"][0]) if first["loc"] else "?"
            env_name = ENV_NAMES.get(field_name, field_name)
            raise SettingsError(
                f"Invalid setting {env_name}: {first['msg']}",
                hint=f"Fix or unset {env_name}; see the settings table in the README.",
            ) from None


#: Settings field → environment variable.
ENV_NAMES: dict[str, str] = {
    "redis_url": "REDIS_URL",
    "state_dir": "GPUFIT_STATE_DIR",
    "feeds": "GPUFIT_FEEDS",
    "feed_timeout_s": "GPUFIT_FEED_TIMEOUT_S",
    "refresh_interval_s": "GPUFIT_REFRESH_INTERVAL_S",
    "price_recheck_s": "GPUFIT_PRICE_RECHECK_S",
    "slack_bot_token": "SLACK_BOT_TOKEN",
    "slack_signing_secret": "SLACK_SIGNING_SECRET",
    "slack_app_token": "SLACK_APP_TOKEN",
    "slack_api_url": "SLACK_API_URL",
    "host": "GPUFIT_HOST",
    "port": "GPUFIT_PORT",
    "log_level": "GPUFIT_LOG_LEVEL",
    "log_format": "GPUFIT_LOG_FORMAT",
    "metrics_enabled": "GPUFIT_METRICS_ENABLED",
    "metrics_port": "GPUFIT_METRICS_PORT",
    "top": "GPUFIT_TOP",
}


#: Where the settings table lives in the README (and docs/operations.md), between these markers.
TABLE_START = "<!-- settings-table:start -->"
TABLE_END = "<!-- settings-table:end -->"


def _default_text(field_name: str) -> str:
    info = Settings.model_fields[field_name]
    default = info.default
    if default is None or default == ():
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    return f"`{default}`"


def _is_secret(field_name: str) -> bool:
    annotation = Settings.model_fields[field_name].annotation
    return annotation is SecretStr or SecretStr in get_args(annotation)


def settings_table_markdown() -> str:
    """The markdown table of every setting (variable, default, secret, meaning), with markers.

    Generated from :class:`Settings` and :data:`ENV_NAMES`, so the README and
    docs/operations.md copies are checked against the code by a test and cannot drift.
    """
    lines = [
        TABLE_START,
        "| Variable | Default | Secret | Meaning |",
        "|---|---|---|---|",
    ]
    for field_name, env_name in ENV_NAMES.items():
        description = (Settings.model_fields[field_name].description or "").replace("|", r"\|")
        secret = "yes" if _is_secret(field_name) else ""
        lines.append(f"| `{env_name}` | {_default_text(field_name)} | {secret} | {description} |")
    lines.append(TABLE_END)
    return "\n".join(lines) + "\n"
