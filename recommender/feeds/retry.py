"""How often and how patiently one price source is fetched again: tenacity ``AsyncRetrying``
with bounded attempts, exponential backoff with jitter, and ``Retry-After`` honoured (capped).
The policy is a value, so tests pass zero waits or their own sleep."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

__all__ = ["RetryPolicy", "Retryable", "Sleep"]

Sleep = Callable[[float], Awaitable[None]]


class Retryable(Exception):
    """A failure worth another attempt (network error, 5xx, 429)."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently to retry one source."""

    #: Attempts in all (first try included); tenacity would otherwise retry forever.
    attempts: int = 4
    #: First backoff, doubled per attempt up to ``max_wait_s``, plus up to ``jitter_s`` random.
    initial_wait_s: float = 0.5
    max_wait_s: float = 20.0
    jitter_s: float = 1.0
    #: Longest ``Retry-After`` obeyed; why: a refresh must finish, and a server asking for more
    #: than a minute is better retried at the next scheduled refresh.
    max_retry_after_s: float = 60.0
    #: The sleep function (tests pass one that records the waits instead of sleeping).
    sleep: Sleep = field(default=asyncio.sleep, compare=False)

    @classmethod
    def no_wait(cls, attempts: int = 3) -> RetryPolicy:
        """Retry without sleeping at all (tests)."""
        return cls(attempts=attempts, initial_wait_s=0, max_wait_s=0, jitter_s=0, sleep=_no_sleep)

    def retrying(self) -> AsyncRetrying:
        # exponential (initial, 2x initial, 4x ...) capped, plus uniform jitter; these two
        # wait classes exist in every supported tenacity (8.2+), unlike wait_exponential_jitter's
        # keyword set.
        backoff = wait_exponential(multiplier=self.initial_wait_s, max=self.max_wait_s) + (
            wait_random(0, self.jitter_s)
        )

        def wait(state: RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            if isinstance(error, Retryable) and error.retry_after_s is not None:
                return min(error.retry_after_s, self.max_retry_after_s)
            return float(backoff(state))

        return AsyncRetrying(
            stop=stop_after_attempt(max(1, self.attempts)),
            wait=wait,
            retry=retry_if_exception(lambda e: isinstance(e, Retryable)),
            sleep=self.sleep,
            reraise=True,
        )


async def _no_sleep(_seconds: float) -> None:
    return None
