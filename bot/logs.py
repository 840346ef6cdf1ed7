"""Logs that never leak: structlog processors over every record, request context, redaction.

:func:`configure_logging` installs one handler on the root logger whose formatter is
structlog's :class:`~structlog.stdlib.ProcessorFormatter`, so records from gpufit's own
loggers and from its libraries (Bolt, slack_sdk, uvicorn, httpx) go through the same
processor chain: the request context (:mod:`structlog.contextvars`, bound by
:func:`log_context` / :func:`start_request_context`), ``extra=`` fields, the rendered
traceback, then :class:`Redactor` over every value, then a JSON (or console) renderer. The
composition root (``gpufit serve`` / ``gpufit worker``) calls it once.

A line looks like (docs/operations.md, "Logs")::

    {"ts": "…Z", "level": "INFO", "logger": "bot.listeners.commands", "message": "answered",
     "request_id": "5f0c…", "kind": "command", "team_id": "T0123", …}
"""

from __future__ import annotations

import logging
import re
import sys
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

import structlog
from structlog.contextvars import (
    bind_contextvars,
    bound_contextvars,
    clear_contextvars,
    get_contextvars,
)
from structlog.typing import EventDict, Processor, WrappedLogger

from bot.settings import Settings

__all__ = [
    "REDACTED",
    "Redactor",
    "configure_logging",
    "current_log_context",
    "log_context",
    "new_request_id",
    "start_request_context",
]

# ------------------------------------------------------------------------------ log context

#: The request context fields a log line may carry.
CONTEXT_FIELDS = ("request_id", "kind", "team_id", "channel_id", "user_id", "command")


def new_request_id() -> str:
    """A fresh request id (32 hex digits)."""
    return uuid.uuid4().hex


def current_log_context() -> dict[str, str]:
    """The context fields bound in the running task or thread."""
    bound = get_contextvars()
    return {key: str(bound[key]) for key in CONTEXT_FIELDS if key in bound}


def _checked(fields: Mapping[str, str | None]) -> dict[str, str]:
    unknown = set(fields) - set(CONTEXT_FIELDS)
    if unknown:
        raise ValueError(f"unknown log context fields {sorted(unknown)}; use {CONTEXT_FIELDS}")
    return {key: str(value) for key, value in fields.items() if value is not None}


def start_request_context(**fields: str | None) -> None:
    """Replace the context for the rest of the running task (and the tasks it starts).

    For Bolt middleware, whose ``next()`` returns before the listeners run, so a ``with``
    block would end too early. Each request runs in its own task (uvicorn, Socket Mode), so
    the context never leaks into another request.
    """
    checked = _checked(fields)
    clear_contextvars()
    bind_contextvars(**checked)


@contextmanager
def log_context(**fields: str | None) -> Iterator[dict[str, str]]:
    """Bind request context for every log line inside the block (and tasks it starts).

    ``with log_context(request_id=new_request_id(), team_id=..., user_id=..., command=...):``.
    Fields given as ``None`` are left out; nesting adds to the outer context.
    """
    with bound_contextvars(**_checked(fields)):
        yield current_log_context()


# ------------------------------------------------------------------------------ redaction

REDACTED = "[REDACTED]"

#: Names of keys (``key=value``, ``"key": "value"``, query parameters) whose values are
#: secrets or reply URLs: anything ending in token/secret/password/api key/signature/credential
#: (``access_token``, ``client_secret``, ``X-Amz-Signature``, ``x-api-key``), and the short
#: names used in query strings (``key``, ``sig`` as in Azure SAS, ``auth``).
_SECRET_KEY = (
    r"(?:[a-z0-9_-]*(?:token|secret|passw(?:or)?d|pwd|api[_-]?key|access[_-]?key|signature"
    r"|credential)"
    r"|key|sig|auth|authorization|response_url)"
)

#: Secrets in known formats, wherever they appear: in a log line, or in what a user typed
#: (which the bot echoes, stores and logs). Character classes stop at quotes and backslashes
#: so redacting text that holds serialized JSON cannot break it.
KNOWN_SECRETS: tuple[re.Pattern[str], ...] = (
    # Slack tokens: bot/user/app/refresh/config tokens (api.slack.com/authentication/token-types).
    re.compile(r"\bxox(?:[abprs]|e(?:\.xox[abprs])?)-[A-Za-z0-9-]+"),
    re.compile(r"\bxapp-[A-Za-z0-9-]+"),
    # Incoming webhooks and slash-command / interaction response_url, plain or URL-encoded.
    re.compile(r"https?(?::|%3A)(?://|%2F%2F)hooks\.slack\.com[^\s\"'<>\\]*", re.IGNORECASE),
    # AWS access key ids: a 4-letter type prefix and 16 more (AWS IAM User Guide, "Unique
    # identifiers": AKIA long-term, ASIA temporary keys).
    re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"),
    # An AWS secret access key (40 base64 characters) next to what names it.
    re.compile(
        r"(?P<key>\baws[a-z_ -]{0,20}secret[a-z_ -]{0,20}[\"']?\s*[:=]?\s*[\"']?)"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])",
        re.IGNORECASE,
    ),
    # GitHub tokens: ghp_/gho_/ghu_/ghs_/ghr_ and fine-grained github_pat_ (GitHub docs,
    # "About authentication to GitHub": token prefixes).
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251})\b"),
    # Hugging Face user access tokens: hf_ and 34 letters (huggingface_hub's token format).
    re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"),
    # PEM private keys (RFC 7468): the whole block, or from BEGIN on when it is cut.
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----"
        r"|[^\"']*)",
        re.DOTALL,
    ),
)

#: What must never reach a log line, whatever logged it: the known formats, then secret-named
#: values and credentials in URLs.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    *KNOWN_SECRETS,
    # key=value / "key": "value" / ?key=value for keys that hold secrets: form bodies, dicts,
    # headers and the query strings of URLs that libraries log (httpx's request lines).
    re.compile(
        rf"(?P<key>\b{_SECRET_KEY}[\"']?\s*[:=]\s*[\"']?)(?:Bearer\s+)?[^\s\"'&,;}}#\\]+",
        re.IGNORECASE,
    ),
    # Credentials inside URLs: scheme://user:password@host.
    re.compile(r"(?P<key>\b[a-z][a-z0-9+.-]*://[^\s:/@\"'\\]*:)[^\s@/\"'\\]+(?=@)", re.IGNORECASE),
)

#: Field names whose values are dropped whole.
_SECRET_FIELD = re.compile(r"token|secret|password|authorization|response_url|cookie", re.I)


def _replace(match: re.Match[str]) -> str:
    key = match.groupdict().get("key")
    return f"{key}{REDACTED}" if key else REDACTED


def redact_known_secrets(text: str) -> str:
    """``text`` with every secret of a known format (:data:`KNOWN_SECRETS`) replaced by
    :data:`REDACTED`: for text a user typed, before the bot echoes, stores or logs it."""
    for pattern in KNOWN_SECRETS:
        text = pattern.sub(_replace, text)
    return text


class Redactor:
    """Scrubs secrets from text (the fixed patterns plus the configured secret values) and,
    as a structlog processor, from every value of an event dict."""

    #: Shorter "secrets" would redact ordinary words; real tokens and secrets are far longer.
    MIN_SECRET_LEN = 8

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted(
            {s for s in secrets if len(s) >= self.MIN_SECRET_LEN}, key=len, reverse=True
        )
        self._literal = re.compile("|".join(map(re.escape, values))) if values else None

    def __call__(self, text: str) -> str:
        if self._literal is not None:
            text = self._literal.sub(REDACTED, text)
        for pattern in _PATTERNS:
            text = pattern.sub(_replace, text)
        return text

    def value(self, value: Any, key: str = "") -> Any:
        """Redact a structured value: strings, mappings, sequences; secret-named keys whole."""
        if key and _SECRET_FIELD.search(key):
            return REDACTED
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {str(k): self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(v) for v in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        return self(str(value))

    def processor(
        self, logger: WrappedLogger, method_name: str, event_dict: EventDict
    ) -> EventDict:
        """The structlog processor: every value of the event dict, redacted."""
        return {key: self.value(value, key) for key, value in event_dict.items()}


# ------------------------------------------------------------------------------ processors


def _upper_level(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    event_dict["level"] = str(event_dict.get("level", method_name)).upper()
    return event_dict


def _rename(old: str, new: str) -> Processor:
    def rename(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
        if old in event_dict:
            event_dict[new] = event_dict.pop(old)
        return event_dict

    return rename


#: Keys a JSON line starts with, in this order (then the context and ``extra=`` fields).
_LEADING_KEYS = ("ts", "level", "logger", "message")


def _leading_keys_first(
    logger: WrappedLogger, method_name: str, event_dict: EventDict
) -> EventDict:
    ordered = {key: event_dict.pop(key) for key in _LEADING_KEYS if key in event_dict}
    ordered.update(event_dict)
    return ordered


def _shared_chain() -> list[Processor]:
    """Processors every record passes first, a library's stdlib record or a structlog call."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_logger_name,
        structlog.stdlib.add_log_level,
        _upper_level,
        structlog.stdlib.ExtraAdder(),
        structlog.processors.TimeStamper(fmt="iso", utc=True, key="ts"),
    ]


def _formatter(settings: Settings, redactor: Redactor) -> structlog.stdlib.ProcessorFormatter:
    renderer: Processor
    if settings.log_format == "json":
        # The rendered traceback under ``exc`` and the message under ``message`` (the keys
        # docs/operations.md documents), then one JSON object per line.
        finish: list[Processor] = [
            _rename("exception", "exc"),
            _rename("event", "message"),
            _leading_keys_first,
        ]
        renderer = structlog.processors.JSONRenderer(ensure_ascii=False, default=str)
    else:
        finish = []
        # Plain tracebacks: the traceback is text by now (format_exc_info), already redacted.
        renderer = structlog.dev.ConsoleRenderer(
            colors=False, timestamp_key="ts", exception_formatter=structlog.dev.plain_traceback
        )
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_chain(),
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,  # the traceback as text, so it is scrubbed
            redactor.processor,
            *finish,
            renderer,
        ],
    )


#: Bolt's loggers: ``slack_bolt.*`` and the app's own (``AsyncApp(logger=…)`` in bot.app).
_BOLT_LOGGERS = ("slack_bolt", "gpufit.slack")
#: ``…, body: <the raw request body>)`` as Bolt logs a request that failed verification.
_BOLT_BODY = re.compile(r"\bbody: .*", re.DOTALL)


class _NoRequestBodies(logging.Filter):
    """Bolt logs a request that failed signature verification with its whole body (at INFO:
    ``Invalid request signature detected (…, body: …)``): an unverified, attacker-chosen body,
    a user's text. Such records keep their first part only."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith(_BOLT_LOGGERS):
            message = record.getMessage()
            if "body: " in message:
                record.msg = _BOLT_BODY.sub("body: [omitted])", message)
                record.args = ()
        return True


#: Loggers of libraries that install handlers of their own; theirs go, ours format all.
_THIRD_PARTY_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "slack_bolt")


def configure_logging(settings: Settings, *, stream: TextIO | None = None) -> logging.Handler:
    """Send every log record through one redacting structlog formatter on the root logger.

    Idempotent: calling it again replaces the handler it installed before. Returns it.
    ``structlog.get_logger()`` loggers are routed through the same handler. Uvicorn must be
    started with ``log_config=None`` so it keeps this configuration.
    """
    redactor = Redactor(settings.secret_values())
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(_formatter(settings, redactor))
    handler.set_name("gpufit")
    handler.addFilter(_NoRequestBodies())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "gpufit"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level)
    for name in _THIRD_PARTY_LOGGERS:
        lib = logging.getLogger(name)
        lib.handlers.clear()
        lib.propagate = True
    # httpx logs every request URL at INFO (response_url included); keep it to warnings.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, root.level))
    # Bolt's INFO lines are per-request chatter (and carried unverified bodies): warnings only.
    # Only ``slack_bolt``: Bolt copies the level of the app's logger (gpufit.slack) onto one
    # named after the app, "gpufit", the parent of all of ours.
    logging.getLogger("slack_bolt").setLevel(max(logging.WARNING, root.level))
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_chain(),
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    return handler
