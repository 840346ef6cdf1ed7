"""What a watch is: a query over offers (or a workload), a threshold, and who it belongs to.

A watch is one of two forms:

* **offer form** — a GPU (optionally a count, provider, region, spot/on-demand) and a price
  ceiling, either for the instance (``$20/h``; for a multi-node count, the whole cluster) or per
  GPU-hour (``$2/gpu-hour``). The watched price is the cheapest matching offer's.
* **workload form** — a training job in gpufit's own words (``13B full finetune 2 days``) and
  a whole-run budget (``under $4000``). The watched price is the expected total cost of the
  best option :func:`recommender.recommend` finds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from recommender import GpufitError

__all__ = [
    "ImpossibleWatchError",
    "OfferQuery",
    "PriceBasis",
    "Threshold",
    "Watch",
    "WatchError",
    "WatchNotFoundError",
    "WatchSpec",
    "WatchSyntaxError",
]

#: Largest GPU count a watch may name: the same ceiling as a workload's hardware request.
MAX_GPUS = 4096  # recommender.workload.HardwareRequest accepts 1-4096

WATCH_EXAMPLES = (
    '"watch 8xH100 below $20/h", "watch H100 spot under $2/gpu-hour" '
    'or "watch 13B full finetune 2 days under $4000"'
)


class WatchError(GpufitError):
    """A watch could not be created, found or removed."""


class WatchSyntaxError(WatchError):
    """The watch text could not be understood."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint or f"Try: {WATCH_EXAMPLES}")


class ImpossibleWatchError(WatchError):
    """The watch is understood but no offer could ever satisfy it."""


class WatchNotFoundError(WatchError):
    """No watch with that id belongs to this channel."""

    def __init__(self, watch_id: str) -> None:
        super().__init__(
            f"No watch {watch_id!r} in this channel.",
            hint="Say `/gpufit watches` to list this channel's watches and their ids.",
        )
        self.watch_id = watch_id


class PriceBasis(StrEnum):
    """What the threshold's dollars are per."""

    INSTANCE_HOUR = "instance_hour"  # the whole instance (or cluster of nodes) per hour
    GPU_HOUR = "gpu_hour"  # one GPU for one hour
    RUN = "run"  # the whole training run (workload form)

    @property
    def unit(self) -> str:
        return {"instance_hour": "/h", "gpu_hour": "/GPU-h", "run": " for the run"}[self.value]


@dataclass(frozen=True, slots=True)
class Threshold:
    """Alert when the watched price is at or below ``usd``."""

    usd: float
    basis: PriceBasis

    def __post_init__(self) -> None:
        if not (self.usd > 0 and math.isfinite(self.usd)):
            raise ValueError("a threshold is a positive, finite amount")

    def label(self) -> str:
        return f"{fmt_usd(self.usd)}{self.basis.unit}"


@dataclass(frozen=True, slots=True)
class OfferQuery:
    """Which offers an offer-form watch looks at."""

    gpu_id: str
    #: Total GPUs wanted; ``None`` means any instance shape of this GPU.
    gpu_count: int | None = None
    #: Canonical provider ids (as in ``Offer.provider``); empty means any provider.
    providers: frozenset[str] = frozenset()
    #: Lower-case prefixes of provider region ids (``us-east``, ``europe-west4``); empty: any.
    regions: tuple[str, ...] = ()
    #: ``True`` spot only, ``False`` on-demand only, ``None`` either.
    spot: bool | None = None
    #: How the user named the place (``on amazon in europe``), for labels.
    place: str = ""

    def __post_init__(self) -> None:
        if self.gpu_count is not None and not 1 <= self.gpu_count <= MAX_GPUS:
            raise ValueError(f"GPU count must be between 1 and {MAX_GPUS}")

    def label(self) -> str:
        parts = [f"{self.gpu_count}× {self.gpu_id}" if self.gpu_count else self.gpu_id]
        if self.spot is True:
            parts.append("spot")
        elif self.spot is False:
            parts.append("on-demand")
        if self.place:
            parts.append(self.place)
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class WatchSpec:
    """The parsed watch text: what to watch and the threshold (no owner yet)."""

    threshold: Threshold
    #: Offer form: the offers to watch. Exactly one of ``query`` and ``workload_text`` is set.
    query: OfferQuery | None = None
    #: Workload form: the job in gpufit's words, re-parsed with ``parse_workload`` each pass.
    workload_text: str | None = None
    #: Post one summary a day of this watch's current price to its channel.
    daily_digest: bool = False
    #: Defaults this parser assumed, shown back to the user.
    assumed: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.query is None) == (self.workload_text is None):
            raise ValueError("a watch has either an offer query or a workload, not both")
        if self.workload_text is not None and self.threshold.basis is not PriceBasis.RUN:
            raise ValueError("a workload watch takes a whole-run budget")
        if self.query is not None and self.threshold.basis is PriceBasis.RUN:
            raise ValueError("an offer watch takes a price per hour or per GPU-hour")

    def label(self) -> str:
        what = self.query.label() if self.query is not None else f"“{self.workload_text}”"
        return f"{what} at or below {self.threshold.label()}"


@dataclass(frozen=True, slots=True)
class Watch:
    """A stored subscription: a spec owned by one channel of one workspace."""

    id: str
    team_id: str
    channel_id: str
    created_by: str
    created_at: datetime
    spec: WatchSpec
    #: The text the user typed (after ``watch``), for listings.
    text: str = ""
    #: Set when the worker stopped evaluating this watch, with the reason shown in listings.
    disabled_reason: str | None = field(default=None)

    @property
    def enabled(self) -> bool:
        return self.disabled_reason is None

    @property
    def threshold(self) -> Threshold:
        return self.spec.threshold

    @property
    def daily_digest(self) -> bool:
        return self.spec.daily_digest


def fmt_usd(value: float) -> str:
    """``$19.84`` below $100, ``$4,120`` above: cents matter for hourly prices only."""
    if value < 100:
        return f"${value:,.2f}"
    return f"${value:,.0f}"
