"""Logs that never leak: request context, redaction of secrets, JSON and text formatters.

:func:`configure_logging` installs one handler on the root logger: one JSON object per line
(or plain text) with the request context (:func:`log_context`) and a :class:`RedactingFilter`
that removes Slack tokens, webhook / ``response_url`` URLs, URL passwords and the configured
secret values from every record, whichever library logged it. The composition root
(``gpufit serve`` / ``gpufit worker``) calls it once.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.settings import Settings

__all__ = [
    "JsonFormatter",
    "RedactingFilter",
    "Redactor",
    "configure_logging",
    "current_log_context",
    "log_context",
    "new_request_id",
    "start_request_context",
]

# ------------------------------------------------------------------------------ log context

#: The request context fields a log line may carry, in output order.
CONTEXT_FIELDS = ("request_id", "kind", "team_id", "channel_id", "user_id", "command")

_context: ContextVar[Mapping[str, str]] = ContextVar("gpufit_log_context", default={})  # noqa: B039 - never mutated


def new_request_id() -> str:
    """A fresh request id (32 hex digits)."""
    return uuid.uuid4().hex


def current_log_context() -> dict[str, str]:
    """The context fields bound in the running task or thread."""
    return dict(_context.get())


def _bind(fields: Mapping[str, str | None]) -> Token[Mapping[str, str]]:
    unknown = set(fields) - set(CONTEXT_FIELDS)
    if unknown:
        raise ValueError(f"unknown log context fields {sorted(unknown)}; use {CONTEXT_FIELDS}")
    merged = dict(_context.get())
    merged.update({key: str(value) for key, value in fields.items() if value is not None})
    return _context.set(merged)


def start_request_context(**fields: str | None) -> None:
    """Replace the context for the rest of the running task (and the tasks it starts).

    For Bolt middleware, whose ``next()`` returns before the listeners run, so a ``with``
    block would end too early. Each request runs in its own task (uvicorn, Socket Mode), so
    the context never leaks into another request.
    """
    _context.set({})
    _bind(fields)


@contextmanager
def log_context(**fields: str | None) -> Iterator[dict[str, str]]:
    """Bind request context for every log line inside the block (and tasks it starts).

    ``with log_context(request_id=new_request_id(), team_id=..., user_id=..., command=...):``.
    Fields given as ``None`` are left out; nesting adds to the outer context.
    """
    token = _bind(fields)
    try:
        yield current_log_context()
    finally:
        _context.reset(token)


# ------------------------------------------------------------------------------ redaction

REDACTED = "[REDACTED]"

#: What must never reach a log line, whatever logged it. Character classes stop at quotes and
#: backslashes so redacting a serialized JSON line cannot break it.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Slack tokens: bot/user/app/refresh/config tokens (api.slack.com/authentication/token-types).
    re.compile(r"\bxox(?:[abprs]|e(?:\.xox[abprs])?)-[A-Za-z0-9-]+"),
    re.compile(r"\bxapp-[A-Za-z0-9-]+"),
    # Incoming webhooks and slash-command / interaction response_url, plain or URL-encoded.
    re.compile(r"https?(?::|%3A)(?://|%2F%2F)hooks\.slack\.com[^\s\"'<>\\]*", re.IGNORECASE),
    # key=value / "key": "value" for keys that hold secrets or reply URLs (form bodies, dicts).
    re.compile(
        r"(?P<key>\b(?:response_url|token|signing_secret|client_secret|password|authorization)"
        r"[\"']?\s*[:=]\s*[\"']?)(?:Bearer\s+)?[^\s\"'&,;}\\]+",
        re.IGNORECASE,
    ),
    # Credentials inside URLs: scheme://user:password@host.
    re.compile(r"(?P<key>\b[a-z][a-z0-9+.-]*://[^\s:/@\"'\\]*:)[^\s@/\"'\\]+(?=@)", re.IGNORECASE),
)

#: Extra-field names whose values are dropped whole.
_SECRET_KEYS = re.compile(r"token|secret|password|authorization|response_url|cookie", re.I)


def _replace(match: re.Match[str]) -> str:
    key = match.groupdict().get("key")
    return f"{key}{REDACTED}" if key else REDACTED


class Redactor:
    """Scrubs secrets from text: the fixed patterns plus the configured secret values."""

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
        """Redact a structured value (an ``extra=`` field): strings, mappings, sequences."""
        if key and _SECRET_KEYS.search(key):
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


#: Attributes every LogRecord has; anything else on a record came from ``extra=``.
_RECORD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "gpufit_context",
    "gpufit_ctx",
}


class RedactingFilter(logging.Filter):
    """Rewrites each record in place so no handler after it can see a secret.

    The message is rendered once (``msg % args``) and scrubbed; the traceback and stack are
    rendered and scrubbed into ``exc_text`` / ``stack_info``; ``extra=`` fields are scrubbed,
    and dropped whole when their name says they hold a secret. It also captures the request
    context of the logging task, so the formatter reports the context of the caller.
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redact = redactor
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the line
            message = f"{record.msg!s} {record.args!r}"
        record.msg = self._redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        record.exc_info = None  # the scrubbed exc_text is what formatters print
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        for key, value in list(record.__dict__.items()):
            if key not in _RECORD_ATTRS:
                setattr(record, key, self._redact.value(value, key))
        if not hasattr(record, "gpufit_context"):
            record.gpufit_context = current_log_context()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``message``, the request
    context fields that are bound, ``exc`` when there is a traceback, and ``extra=`` fields.

    When a :class:`Redactor` is given it also scrubs the finished line (defence in depth).
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        doc: dict[str, Any] = {
            "ts": ts.replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = getattr(record, "gpufit_context", None)
        if context is None:
            context = current_log_context()
        doc.update({key: context[key] for key in CONTEXT_FIELDS if key in context})
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            doc["exc"] = record.exc_text
        if record.stack_info:
            doc["stack"] = record.stack_info
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRS and key not in doc:
                doc[key] = value
        line = json.dumps(doc, default=str, ensure_ascii=False)
        return self._redact(line) if self._redact is not None else line


class _TextFormatter(logging.Formatter):
    def __init__(self, redactor: Redactor) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s%(gpufit_ctx)s")
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        context = getattr(record, "gpufit_context", None) or current_log_context()
        pairs = " ".join(f"{key}={context[key]}" for key in CONTEXT_FIELDS if key in context)
        record.gpufit_ctx = f" [{pairs}]" if pairs else ""
        return self._redact(super().format(record))


#: Loggers of libraries that install handlers of their own; theirs go, ours format all.
_THIRD_PARTY_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "slack_bolt")


def configure_logging(settings: Settings, *, stream: TextIO | None = None) -> logging.Handler:
    """Send every log record through one redacting handler on the root logger.

    Idempotent: calling it again replaces the handler it installed before. Returns it.
    Uvicorn must be started with ``log_config=None`` so it keeps this configuration.
    """
    redactor = Redactor(settings.secret_values())
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(RedactingFilter(redactor))
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter(redactor))
    else:
        handler.setFormatter(_TextFormatter(redactor))
    handler.set_name("gpufit")
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
    return handler
