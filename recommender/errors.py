"""The one exception tree of gpufit.

::

    GpufitError                      anything gpufit itself raises on purpose
    ├── WorkloadError                the user's text could not be understood (exit code 2)
    │   └── UnknownGpuError          a named accelerator is not in the spec table
    ├── CatalogError                 a price source could not be read or parsed
    │   └── PriceFeedError           an upstream feed failed (network, HTTP status, body)
    └── StoreError                   the Redis store failed in a way we cannot degrade around

Each class builds its own user-facing message; exactly one place per face (the CLI's
``main`` and the Slack error handler) turns a ``GpufitError`` into text.
"""

from __future__ import annotations

__all__ = [
    "CatalogError",
    "FeedTooLargeError",
    "GpufitError",
    "PriceFeedError",
    "StoreError",
    "UnknownGpuError",
    "WorkloadError",
]

EXAMPLE = "13B full finetune 2 days"


class GpufitError(Exception):
    """Root of every error gpufit raises on purpose."""

    #: A short actionable hint shown under the message ("Try: ...").
    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if hint is not None:
            self.hint = hint

    def user_text(self) -> str:
        """The message plus hint, as plain text (no markup)."""
        if self.hint:
            return f"{self.message}\n{self.hint}"
        return self.message


class WorkloadError(GpufitError):
    """The user's input could not be turned into a workload."""

    def __init__(
        self,
        message: str,
        *,
        not_understood: tuple[str, ...] = (),
        hint: str | None = None,
    ) -> None:
        default = f'Try: "{EXAMPLE}" or "llama-3-70b qlora on 2B tokens"'
        super().__init__(message, hint=hint or default)
        self.not_understood = not_understood


class UnknownGpuError(WorkloadError):
    """A GPU name that is not in the spec table."""

    def __init__(self, name: str, suggestions: tuple[str, ...] = ()) -> None:
        hint = 'Try: "on 8x H100" or "on 1x A100-40GB"'
        if suggestions:
            hint = f'Try: "on 8x {suggestions[0]}" (did you mean {", ".join(suggestions)}?)'
        super().__init__(f"Unknown GPU {name!r}.", not_understood=(name,), hint=hint)
        self.name = name


class CatalogError(GpufitError):
    """A price source could not be read or parsed."""

    def __init__(self, message: str, *, source: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.source = source


class PriceFeedError(CatalogError):
    """An upstream price feed failed: network error, bad status or unusable body."""


class FeedTooLargeError(PriceFeedError):
    """A price feed document is larger than the size cap it is fetched under."""


class StoreError(GpufitError):
    """The Redis store failed and there is nothing to fall back on."""
