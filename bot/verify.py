"""Slack request signatures, checked before anything reads a request's body.

Slack signs each HTTP request with ``X-Slack-Signature: v0=<hex HMAC-SHA256>`` over
``v0:<timestamp>:<raw body>`` keyed by the app's signing secret, and sends the Unix time it
signed at in ``X-Slack-Request-Timestamp``; a request more than five minutes old is a replay
(slack.md §1.1, https://api.slack.com/authentication/verifying-requests-from-slack).

Both headers are checked for their exact shape first (ASCII digits; ``v0=`` and 64 hex
digits): a malformed header is refused without touching the body and without an exception,
so no error handler ever sees an unverified payload.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import SecretStr
from slack_sdk.signature import SignatureVerifier as SlackSignatures

__all__ = ["MAX_SKEW_S", "SignatureVerifier"]

#: Slack's replay window: requests signed more than five minutes from now are refused.
MAX_SKEW_S = 5 * 60

_TIMESTAMP = re.compile(r"[0-9]{1,12}", re.ASCII)
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}", re.ASCII)


@dataclass(frozen=True)
class SignatureVerifier:
    """Verifies Slack's v0 request signatures with the app's signing secret."""

    secret: SecretStr
    max_skew_s: int = MAX_SKEW_S

    def headers_ok(self, headers: Mapping[str, str], now: float) -> bool:
        """Both signature headers are present, well formed, and the timestamp is fresh."""
        timestamp = headers.get("x-slack-request-timestamp", "")
        signature = headers.get("x-slack-signature", "")
        if _TIMESTAMP.fullmatch(timestamp) is None or _SIGNATURE.fullmatch(signature) is None:
            return False
        return abs(now - int(timestamp)) <= self.max_skew_s

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> bool:
        """The request is Slack's own: well-formed fresh headers and a matching signature."""
        if not self.headers_ok(headers, now):
            return False
        # The HMAC itself is slack_sdk's; only the shape and freshness checks above are ours
        # (slack_sdk's is_valid raises on a timestamp that is not an integer).
        expected = SlackSignatures(self.secret.get_secret_value()).generate_signature(
            timestamp=headers["x-slack-request-timestamp"], body=body
        )
        return hmac.compare_digest(expected or "", headers["x-slack-signature"])
