"""Every setting gpufit reads, read once from the environment into one validated object.

:class:`Settings` is a pydantic-settings model: ``GPUFIT_<FIELD>`` variables (the prefix), plus
the names Slack and Redis users already know (``SLACK_*``, ``REDIS_URL``) as aliases; both come
from :mod:`bot.envnames`. This module reads the environment (:meth:`Settings.from_env`, once,
at start-up) and everything else receives a :class:`Settings`; the one exception is the CLI
asking :func:`bot.envnames.sets_any_setting` whether anything is set at all. The README's
settings table is generated from the model (:func:`settings_table_markdown`) and checked
against it by a test.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings import SettingsError as SourceError

from bot.envnames import ENV_ALIASES, ENV_PREFIX
from recommender import GpufitError

__all__ = [
    "ENV_NAMES",
    "KEEP_ALIVE_S",
    "TABLE_END",
    "TABLE_START",
    "Settings",
    "SettingsError",
    "settings_table_markdown",
]


#: How long an idle keep-alive connection is kept between requests. It must be longer than
#: the proxy's own idle timeout, so the proxy (not gpufit) closes idle connections and never
#: sends a request on a socket gpufit is closing (a 502): the AWS ALB default idle timeout is
#: 60 s (AWS ELB docs, "Connection idle timeout") and ingress-nginx's
#: upstream-keepalive-timeout is 60 s (ingress-nginx ConfigMap docs). Behind a proxy that
#: keeps idle connections longer (Google Cloud's external Application LB: 600 s) set
#: GPUFIT_KEEP_ALIVE_S above it (docs/operations.md).
KEEP_ALIVE_S = 75  # ours: 60 s of the common proxies above plus a margin


class SettingsError(GpufitError):
    """A setting in the environment has an invalid value."""


#: Default of ``GPUFIT_FEED_MAX_OFFERS`` (see the field).
FEED_MAX_OFFERS = 200_000


def _alias(field_name: str) -> AliasChoices:
    """The field's variable outside the ``GPUFIT_`` namespace, from :data:`ENV_ALIASES` (the
    field name stays valid in code)."""
    return AliasChoices(ENV_ALIASES[field_name])


class Settings(BaseSettings):
    """gpufit's configuration. Field docs become the README settings table.

    ``Settings()`` is the defaults (the environment is read only by :meth:`from_env`), so a
    test or a library caller never picks up the process's variables by accident.
    """

    model_config = SettingsConfigDict(
        frozen=True,
        extra="ignore",  # other processes' variables are none of our business
        env_prefix=ENV_PREFIX,
        env_ignore_empty=True,  # ``GPUFIT_PORT=`` (compose's unset variable) means unset
        case_sensitive=False,
        populate_by_name=True,
    )

    redis_url: Annotated[
        str | None,
        Field(
            validation_alias=_alias("redis_url"),
            description="Redis server URL; unset starts an embedded Redis in the state dir.",
        ),
    ] = None
    state_dir: Annotated[
        Path | None,
        Field(description="Where the embedded Redis keeps its data (default: user state dir)."),
    ] = None
    feeds: Annotated[
        tuple[str, ...],
        NoDecode,  # a comma-separated list, not JSON (split by ``_split`` below)
        Field(description="Comma-separated price sources (paths or http(s) URLs)."),
    ] = ()
    feed_timeout_s: Annotated[
        float, Field(gt=0, le=300, description="Read timeout for one feed fetch, seconds.")
    ] = 20.0
    # Why 200k: the pods' memory limits in deploy/ hold the measured peak RSS of the worker's
    # refresh and the bot's load at this size, with headroom (bench/memory.py --offers;
    # docs/operations.md, "Feed cap"). Raise it only together with those limits.
    feed_max_offers: Annotated[
        int,
        Field(
            ge=100,
            le=5_000_000,
            description=(
                "Largest price feed the worker reads, in offers (a larger document is refused "
                "and its last good prices kept); the pods' memory limits are sized for it."
            ),
        ),
    ] = FEED_MAX_OFFERS
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
        SecretStr | None,
        Field(
            validation_alias=_alias("slack_bot_token"), description="Slack bot token (xoxb-...)."
        ),
    ] = None
    slack_signing_secret: Annotated[
        SecretStr | None,
        Field(
            validation_alias=_alias("slack_signing_secret"),
            description="Slack signing secret for HTTP mode.",
        ),
    ] = None
    slack_app_token: Annotated[
        SecretStr | None,
        Field(
            validation_alias=_alias("slack_app_token"),
            description="Slack app-level token (xapp-...) for Socket Mode.",
        ),
    ] = None
    slack_api_url: Annotated[
        str,
        Field(
            validation_alias=_alias("slack_api_url"),
            description="Slack Web API base URL (point at a fake Slack in tests).",
        ),
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
            description=(
                "Port of `/metrics` and `/healthz` for `gpufit serve` and `gpufit worker` "
                "(never the public Slack port)."
            ),
        ),
    ] = 9090
    health_port: Annotated[
        int,
        Field(
            ge=1,
            le=65535,
            description=(
                "Port of the probes `/healthz` and `/readyz` for `gpufit serve`, a listener "
                "whose connections are counted apart from the public port's."
            ),
        ),
    ] = 3001
    keep_alive_s: Annotated[
        int,
        Field(
            ge=1,
            le=3600,
            description=(
                "Seconds an idle keep-alive connection is kept; set it above your proxy's "
                "idle timeout (the default suits the 60 s of AWS ALB and ingress-nginx)."
            ),
        ),
    ] = KEEP_ALIVE_S
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
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Only the values passed in: from_env() runs the environment source itself, so that
        # it can read a given mapping (a ConfigMap, .env.example) as well as os.environ.
        return (init_settings,)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read every setting from ``environ`` (default: the process environment).

        Raises:
            SettingsError: a value is invalid; the message names the variable.
        """
        source = EnvSettingsSource(cls)
        if environ is not None:
            # The same source over the given mapping, keyed the way it keys os.environ
            # (case-insensitive, empty values dropped: the settings above).
            source.env_vars = {k.lower(): v for k, v in environ.items() if v != ""}
        try:
            return cls(**source())
        except SourceError as exc:
            raise SettingsError(str(exc), hint=_HINT) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            # The error is located by field name, or by alias for the non-GPUFIT_ names.
            where = str(first["loc"][0]) if first["loc"] else "?"
            env_name = ENV_NAMES.get(where, where)
            raise SettingsError(
                f"Invalid setting {env_name}: {first['msg']}",
                hint=f"Fix or unset {env_name}; see the settings table in the README.",
            ) from None


_HINT = "See the settings table in the README."


def env_name(field_name: str) -> str:
    """The environment variable of a :class:`Settings` field."""
    alias = Settings.model_fields[field_name].validation_alias
    if isinstance(alias, AliasChoices):
        return str(alias.choices[0])
    return ENV_PREFIX + field_name.upper()


#: Settings field → environment variable, in declaration order.
ENV_NAMES: dict[str, str] = {name: env_name(name) for name in Settings.model_fields}


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
