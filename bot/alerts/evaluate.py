"""Pure rules: a watch's current price in a catalog, whether it can ever match, hysteresis.

Nothing here does I/O or reads the clock; the worker passes ``now`` and the catalog in, and
keeps :class:`WatchState` in Redis.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from bot.alerts.model import (
    ImpossibleWatchError,
    OfferQuery,
    PriceBasis,
    Threshold,
    WatchSpec,
    fmt_usd,
)
from bot.render.safe import SOURCE_ERROR_TEXT, public_caveat, public_source_name
from recommender import (
    Catalog,
    CaveatKind,
    Offer,
    Severity,
    SourceInfo,
    get_gpu,
    parse_workload,
    recommend,
)

__all__ = [
    "MIN_REPEAT_DROP_FRAC",
    "REARM_MARGIN_FRAC",
    "PricePoint",
    "Verdict",
    "WatchState",
    "check_watch",
    "current_price",
    "step",
]

#: After an alert, the price must rise this far above the threshold before the watch fires
#: again. Cloud list prices are re-published with cent-level jitter and spot prices wander a
#: few per cent within an hour, so a margin of 5 % keeps a price hovering at the threshold
#: from alerting on every refresh while still re-arming after any real recovery.
REARM_MARGIN_FRAC = 0.05  # ours: above observed spot jitter (a few %), below a real repricing
#: While still below the threshold, a further fall of at least this share of the last alerted
#: price is news worth a repeat ("now even cheaper"); smaller moves are jitter and stay quiet.
MIN_REPEAT_DROP_FRAC = 0.15  # ours: a 15 % cut changes which option a team picks
#: Prices older than this earn a stale-price caveat in an alert.
STALE_AFTER_HOURS = 48.0  # the same two-day rule the answers use (recommender.ranking.recommend)
#: Largest cluster a multi-node watch count may be made of.
MAX_NODES = 2048  # the ceiling the ranking proposes for one job (recommender.estimation.scaling)


@dataclass(frozen=True, slots=True)
class PricePoint:
    """The cheapest way to satisfy a watch in one catalog, priced in the threshold's basis."""

    price_usd: float
    basis: PriceBasis
    offer: Offer
    nodes: int = 1
    #: Workload form: the option's expected hours to finish.
    hours: float | None = None
    #: Plain-text small print: spot preemption, stale prices, the option's own warnings.
    caveats: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """Identity of what is priced: the offer and how many of it."""
        return f"{self.offer.key}*{self.nodes}"

    def where(self) -> str:
        o = self.offer
        shape = f"{self.nodes}× {o.instance_type}" if self.nodes > 1 else o.instance_type
        kind = o.kind
        zone = f"/{o.zone}" if o.zone else ""
        return f"{o.provider} {shape} ({o.gpu_count}× {o.gpu_id}, {kind}) in {o.region}{zone}"

    def label(self) -> str:
        return f"{fmt_usd(self.price_usd)}{self.basis.unit}"


def _can_make(count: int, offer: Offer) -> int | None:
    """Nodes of ``offer`` that make ``count`` GPUs, or ``None`` when it cannot."""
    if offer.gpu_count == count:
        return 1
    nodes, rest = divmod(count, offer.gpu_count)
    if rest == 0 and 1 < nodes <= MAX_NODES and offer.fabric.fast:
        return nodes
    return None


def _matches(q: OfferQuery, offer: Offer) -> int | None:
    """Nodes of ``offer`` that satisfy the query, or ``None``."""
    if offer.gpu_id != q.gpu_id:
        return None
    if q.spot is not None and offer.spot != q.spot:
        return None
    if q.providers and offer.provider not in q.providers:
        return None
    if q.regions and not offer.region.lower().startswith(q.regions):
        return None
    if q.gpu_count is None:
        return 1
    return _can_make(q.gpu_count, offer)


def _source_caveats(offer: Offer, sources: tuple[SourceInfo, ...], now: datetime) -> list[str]:
    out: list[str] = []
    for s in sources:
        if s.name != offer.source:
            continue
        age = s.age_hours(now)
        if age > STALE_AFTER_HOURS:
            out.append(
                f"prices are {age / 24:.0f} days old ({public_source_name(s.name)}, "
                f"as of {s.as_of:%Y-%m-%d}): "
                "check the provider before you rent"
            )
        if s.error:
            out.append(SOURCE_ERROR_TEXT)
    return out


def _offer_caveats(offer: Offer, sources: tuple[SourceInfo, ...], now: datetime) -> list[str]:
    out = _source_caveats(offer, sources, now)
    if offer.spot:
        out.append(
            "spot capacity can be reclaimed at short notice and its price moves hourly: "
            "checkpoint often"
        )
    return out


def current_price(spec: WatchSpec, catalog: Catalog, *, now: datetime) -> PricePoint | None:
    """The watched price now: the cheapest matching offer, or the best option's run cost.

    ``None`` when nothing in the catalog matches (the watch neither fires nor re-arms).
    """
    if spec.query is not None:
        return _offer_price(spec.query, spec.threshold, catalog, now)
    assert spec.workload_text is not None
    workload = parse_workload(spec.workload_text)
    best = recommend(workload, catalog, now=now, top=1).best
    if best is None:
        return None
    caveats = [
        public_caveat(c.kind.value, c.text)
        for c in best.caveats
        if c.severity is Severity.WARN
        or c.kind in (CaveatKind.PREEMPTION, CaveatKind.STALE_PRICES, CaveatKind.SOURCE_ERROR)
    ]
    return PricePoint(
        price_usd=best.expected_cost_usd,
        basis=PriceBasis.RUN,
        offer=best.offer,
        nodes=best.nodes,
        hours=best.expected_hours,
        caveats=tuple(caveats),
    )


def _offer_price(
    q: OfferQuery, threshold: Threshold, catalog: Catalog, now: datetime
) -> PricePoint | None:
    best: tuple[float, str, Offer, int] | None = None
    for offer in catalog.offers:
        nodes = _matches(q, offer)
        if nodes is None:
            continue
        if threshold.basis is PriceBasis.GPU_HOUR:
            price = offer.price_usd_per_gpu_hour
        else:
            price = offer.price_usd_per_hour * nodes
        candidate = (price, offer.key, offer, nodes)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    if best is None:
        return None
    price, _, offer, nodes = best
    return PricePoint(
        price_usd=price,
        basis=threshold.basis,
        offer=offer,
        nodes=nodes,
        caveats=tuple(_offer_caveats(offer, catalog.sources, now)),
    )


def check_watch(spec: WatchSpec, catalog: Catalog, *, now: datetime) -> PricePoint | None:
    """Refuse a watch that can never match; otherwise its current price (if any offer matches).

    Raises:
        ImpossibleWatchError: no feed lists this GPU or provider, no instance shape makes the
            GPU count, or the workload fits no GPU at all.
        WorkloadError: the workload text is not understood.
    """
    if spec.query is not None:
        _check_query(spec.query, catalog)
        return current_price(spec, catalog, now=now)
    assert spec.workload_text is not None
    workload = parse_workload(spec.workload_text)
    rec = recommend(workload, catalog, now=now, top=1)
    if not any(plan.fits for plan in rec.layouts):
        where = "the hardware it names" if workload.hardware is not None else "any GPU gpufit knows"
        raise ImpossibleWatchError(
            f"“{spec.workload_text}” fits on no layout of {where}, at any price.",
            hint="Try LoRA or QLoRA instead of a full fine-tune, a shorter sequence, or a "
            'smaller model: "watch 13B lora 2 days under $500"',
        )
    return current_price(spec, catalog, now=now)


def _check_query(q: OfferQuery, catalog: Catalog) -> None:
    gpu = get_gpu(q.gpu_id)
    same_gpu = [o for o in catalog.offers if o.gpu_id == q.gpu_id]
    if not same_gpu:
        listed = sorted({o.gpu_id for o in catalog.offers})
        raise ImpossibleWatchError(
            f"No price feed lists {gpu.id} offers, so this watch could never fire.",
            hint="GPUs the feeds list: " + ", ".join(listed),
        )
    if q.providers:
        providers = {o.provider for o in catalog.offers}
        if not q.providers & providers:
            raise ImpossibleWatchError(
                f"No price feed covers {'/'.join(sorted(q.providers))}, "
                "so this watch could never fire.",
                hint="Providers the feeds cover: " + ", ".join(sorted(providers)),
            )
        if not any(o.provider in q.providers for o in same_gpu):
            offered_by = sorted({o.provider for o in same_gpu})
            raise ImpossibleWatchError(
                f"{'/'.join(sorted(q.providers))} does not offer {gpu.id} in any feed.",
                hint=f"{gpu.id} is offered by: " + ", ".join(offered_by),
            )
    if q.gpu_count is not None and not any(_can_make(q.gpu_count, o) for o in same_gpu):
        shapes = sorted({o.gpu_count for o in same_gpu})
        fast = sorted({o.gpu_count for o in same_gpu if o.fabric.fast})
        clusters = (
            f"; clusters are whole nodes of {', '.join(map(str, fast))} over a fast fabric"
            if fast
            else "; none come with a fast fabric for multi-node clusters"
        )
        raise ImpossibleWatchError(
            f"No offer shape makes {q.gpu_count}× {gpu.id}: instances come with "
            f"{', '.join(map(str, shapes))} GPUs{clusters}.",
            hint=f"Try: watch {max(shapes)}x{gpu.id} below $20/h",
        )


class Verdict(StrEnum):
    """What one evaluation of a watch decided."""

    NONE = "none"  # nothing to say
    CROSSED = "crossed"  # armed, and the price fell to or below the threshold: alert
    DEEPER = "deeper"  # already alerted, and the price fell a further MIN_REPEAT_DROP_FRAC
    REARMED = "rearmed"  # recovered above threshold + margin: the next crossing alerts


@dataclass(frozen=True, slots=True)
class WatchState:
    """What the worker remembers about a watch between passes."""

    armed: bool = True
    #: Alerts posted (or queued) so far; names each crossing uniquely in idempotency keys.
    alerts: int = 0
    #: The watched price at the previous evaluation ("old" in old → new).
    last_price_usd: float | None = None
    #: The price the latest alert reported.
    alerted_price_usd: float | None = None


def step(
    state: WatchState, point: PricePoint | None, threshold: Threshold
) -> tuple[WatchState, Verdict]:
    """One evaluation: the next state and what to do.

    No matching offer leaves the state as it is: a feed gap neither fires nor re-arms.
    """
    if point is None:
        return state, Verdict.NONE
    price = point.price_usd
    moved = replace(state, last_price_usd=price)
    if state.armed:
        if price <= threshold.usd:
            return replace(
                moved, armed=False, alerts=state.alerts + 1, alerted_price_usd=price
            ), Verdict.CROSSED
        return moved, Verdict.NONE
    if price > threshold.usd * (1 + REARM_MARGIN_FRAC):
        return replace(moved, armed=True), Verdict.REARMED
    alerted = state.alerted_price_usd
    if alerted is not None and price <= alerted * (1 - MIN_REPEAT_DROP_FRAC):
        return replace(moved, alerts=state.alerts + 1, alerted_price_usd=price), Verdict.DEEPER
    return moved, Verdict.NONE
