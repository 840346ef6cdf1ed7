"""How the worker reads Slack's answers: which errors are about the channel, the token or
nothing lasting, and how long a ``Retry-After`` is honoured."""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError

__all__ = [
    "CHANNEL_ERRORS",
    "MAX_RETRY_AFTER_S",
    "POST_SCOPE",
    "TOKEN_ERRORS",
    "TRANSIENT_ERRORS",
    "Deferred",
    "RateLimited",
    "Transient",
    "granted_scopes",
    "is_rate_limited",
    "is_transient",
    "retry_after",
]

log = logging.getLogger("bot.alerts.delivery")  # one logger for the whole delivery path

#: Errors about the channel: the bot cannot post there until a person fixes it.
CHANNEL_ERRORS = {
    "channel_not_found": "the bot cannot see this channel (deleted, or private without the bot)",
    "not_in_channel": "the bot is not a member of this channel; invite it and re-enable",
    "is_archived": "the channel is archived",
}
#: Errors about the workspace's token: nothing can be posted anywhere in that workspace.
TOKEN_ERRORS = {
    "invalid_auth": "the workspace's bot token is invalid",
    "token_revoked": "the app was uninstalled or its token revoked",
    "account_inactive": "the bot user was deactivated",
    "missing_scope": "the app lacks the chat:write scope; reinstall it",
}
#: Longest ``Retry-After`` honoured: a larger (or absurd) value is capped and logged, so one
#: bad header cannot stall a channel for hours.
MAX_RETRY_AFTER_S = 60.0  # ours: Slack's own values are seconds to a minute
#: The scope posting needs; ``missing_scope`` is confirmed by its absence from auth.test.
POST_SCOPE = "chat:write"
#: Errors that say nothing lasting: retried with backoff.
TRANSIENT_ERRORS = {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}


class RateLimited(Exception):
    """Slack answered 429; the channel is held for ``retry_after_s``, then the post retried."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"ratelimited, retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


class Transient(Exception):
    """A failure that says nothing lasting (network, 5xx): retried with backoff."""


class Deferred(Exception):
    """A wait too long to sleep through: the alert goes back to the outbox until then."""

    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


def retry_after(exc: SlackApiError) -> float:
    """Slack's ``Retry-After`` in seconds, capped at :data:`MAX_RETRY_AFTER_S` (logged)."""
    value = _header(exc.response, "retry-after")
    if isinstance(value, list):
        value = value[0]
    try:
        seconds = max(0.0, float(value)) if value is not None else 1.0
    except ValueError:
        log.warning("unreadable Retry-After %r from Slack; waiting 1 s", value)
        return 1.0
    if not seconds <= MAX_RETRY_AFTER_S:  # NaN too
        log.warning("Retry-After %r s from Slack capped at %g s", value, MAX_RETRY_AFTER_S)
        return MAX_RETRY_AFTER_S
    return seconds


def _header(response: Any, name: str) -> Any:
    """A header of a Slack response, by case-insensitive name (``None`` when absent)."""
    headers: Any = getattr(response, "headers", {}) or {}
    return next((v for k, v in dict(headers).items() if str(k).lower() == name), None)


def granted_scopes(response: Any) -> str | None:
    """The scopes a token was granted (``X-OAuth-Scopes`` of an ``auth.test`` answer)."""
    value = _header(response, "x-oauth-scopes")
    return None if value is None else str(value)


def is_rate_limited(exc: SlackApiError) -> bool:
    """Whether Slack throttled the call (HTTP 429, or the ``ratelimited`` error)."""
    status = getattr(exc.response, "status_code", 200)
    return status == 429 or exc.response.get("error") == "ratelimited"


def is_transient(exc: SlackApiError) -> bool:
    """Whether a refusal may pass by itself (429, HTTP 5xx, :data:`TRANSIENT_ERRORS`); any
    other error (a channel, token or message problem) will not change on a retry."""
    status = getattr(exc.response, "status_code", 200)
    error = str(exc.response.get("error") or "")
    return is_rate_limited(exc) or status >= 500 or error in TRANSIENT_ERRORS
