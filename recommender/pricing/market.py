"""What ``gpufit prices`` shows: the cheapest offers of one or more GPUs, each checked against
the same GPU on the other clouds.

A price is flagged, not hidden: the list is a look at the market, and a flagged row is often
real (a deep spot discount in one zone) but should not be trusted without a look. Two checks:

* **Against the other clouds.** The offer's price per GPU-hour against the median, over the
  *other* clouds that list the same GPU in the same market (on demand or spot), of each
  cloud's own median, so that one cloud's many zone rows count once. Below
  :data:`recommender.pricing.sanity.GPU_OUTLIER_FRAC` of it, or above :data:`HIGH_FRAC` times it,
  the row is flagged, once at least :data:`MIN_OTHER_CLOUDS` other clouds list the GPU.
* **Spot against its own on-demand.** A spot price more than
  :data:`recommender.pricing.sanity.DEEP_SPOT_DISCOUNT` below the on-demand price of the same
  instance in the same region (the rule the answers' screen uses).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recommender.errors import WorkloadError
from recommender.gpus import GpuSpec, get_gpu, normalize, try_normalize
from recommender.pricing.offers import Offer
from recommender.pricing.sanity import DEEP_SPOT_DISCOUNT, GPU_OUTLIER_FRAC

__all__ = [
    "HIGH_FRAC",
    "MIN_OTHER_CLOUDS",
    "GpuPrices",
    "PriceRow",
    "gpu_prices",
    "split_gpus",
]

#: A price per GPU-hour above this multiple of the other clouds' median is flagged; why: the
#: real catalogs' regional spread for one instance reaches ~2.3x (GCP H100x8: 33.61 USD/h in
#: us-central1, 78.37 in us-east4, SkyPilot catalog v8), so 3x is beyond an ordinary spread.
HIGH_FRAC = 3.0  # ours
#: Other clouds that must list a GPU (in the same market) before their median means anything.
MIN_OTHER_CLOUDS = 2  # ours: one other cloud is a comparison, not a market

#: Most GPUs one ``prices`` request may name; why: each gets its own table in one reply.
MAX_GPUS = 6  # ours


@dataclass(frozen=True, slots=True)
class PriceRow:
    """One offer as ``prices`` lists it."""

    offer: Offer
    #: Why the price needs a look, plain words; empty when it looks ordinary.
    flags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GpuPrices:
    """The cheapest offers of one GPU, per GPU-hour."""

    gpu: GpuSpec
    rows: tuple[PriceRow, ...]
    #: Offers of this GPU in the catalog, shown or not.
    listed: int
    #: Clouds that list it.
    clouds: int


def split_gpus(words: Sequence[str]) -> tuple[str, ...]:
    """The canonical GPU ids named by ``words`` (``["H100", "L4"]``, ``["H100", "PCIe", "L4"]``,
    ``["A100-80GB,", "L4"]``): the longest run of words that names a GPU wins, left to right,
    and a GPU named twice is listed once.

    Raises:
        WorkloadError: no GPU named, or more than :data:`MAX_GPUS`.
        UnknownGpuError: a word starts no GPU name gpufit knows (with suggestions).
    """
    tokens = [t for w in words for t in w.replace(",", " ").split() if t.lower() != "and"]
    if not tokens:
        raise WorkloadError("Which GPU?", hint="Try: prices H100 L4")
    found: list[str] = []
    i = 0
    while i < len(tokens):
        for j in range(len(tokens), i, -1):
            gpu_id = try_normalize(" ".join(tokens[i:j]))
            if gpu_id is not None:
                found.append(gpu_id)
                i = j
                break
        else:  # no run from here names a GPU: normalize raises UnknownGpuError, with hints
            found.append(normalize(tokens[i]))
            i += 1
    ids = tuple(dict.fromkeys(found))
    if len(ids) > MAX_GPUS:
        raise WorkloadError(
            f"{len(ids)} GPUs named; prices lists at most {MAX_GPUS} at a time.",
            hint="Try: prices H100 L4",
        )
    return ids


def _cloud_medians(offers: Iterable[Offer]) -> dict[bool, dict[str, float]]:
    """spot → cloud → that cloud's median price per GPU-hour."""
    prices: dict[bool, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for o in offers:
        prices[o.spot][o.provider].append(o.price_usd_per_gpu_hour)
    return {
        spot: {cloud: statistics.median(p) for cloud, p in by.items()}
        for spot, by in prices.items()
    }


def _flags(
    o: Offer, medians: dict[bool, dict[str, float]], on_demand: dict[tuple[str, str, str], float]
) -> tuple[str, ...]:
    out: list[str] = []
    others = [m for cloud, m in medians.get(o.spot, {}).items() if cloud != o.provider]
    if len(others) >= MIN_OTHER_CLOUDS:
        median = statistics.median(others)
        price = o.price_usd_per_gpu_hour
        kind = "spot" if o.spot else "on-demand"
        where = f"the {kind} median {median:.2f} on {len(others)} other clouds"
        if price < GPU_OUTLIER_FRAC * median:
            out.append(f"{(1 - price / median) * 100:.0f} % under {where}")
        elif price > HIGH_FRAC * median:
            out.append(f"{price / median:.1f}x {where}")
    od = on_demand.get((o.provider, o.instance_type, o.region))
    if o.spot and od is not None and o.price_usd_per_hour < (1 - DEEP_SPOT_DISCOUNT) * od:
        out.append(f"spot {(1 - o.price_usd_per_hour / od) * 100:.0f} % under its on-demand")
    return tuple(out)


def gpu_prices(gpu_id: str, offers: Iterable[Offer], *, limit: int = 10) -> GpuPrices:
    """The ``limit`` cheapest offers of ``gpu_id`` per GPU-hour (ties by cloud and key), one
    per instance, region and market, each with its flags; ``offers`` may hold any GPUs."""
    mine = [o for o in offers if o.gpu_id == gpu_id]
    medians = _cloud_medians(mine)
    on_demand: dict[tuple[str, str, str], float] = {}
    for o in mine:
        if not o.spot:
            key = (o.provider, o.instance_type, o.region)
            on_demand[key] = min(on_demand.get(key, o.price_usd_per_hour), o.price_usd_per_hour)
    # One row per instance, region and market: its cheapest zone (the zones are in the data).
    cheapest: dict[tuple[str, str, str, bool], Offer] = {}
    for o in sorted(mine, key=lambda o: (o.price_usd_per_gpu_hour, o.provider, o.key)):
        cheapest.setdefault((o.provider, o.instance_type, o.region, o.spot), o)
    ranked = list(cheapest.values())[:limit]
    return GpuPrices(
        gpu=get_gpu(gpu_id),
        rows=tuple(PriceRow(o, _flags(o, medians, on_demand)) for o in ranked),
        listed=len(mine),
        clouds=len({o.provider for o in mine}),
    )
