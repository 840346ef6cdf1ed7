"""Watch text → :class:`~bot.alerts.model.WatchSpec`.

The text is ``[watch] <what> <below|under|…> <amount>[<unit>] [daily]``. The part before the
comparison word is either an **offer query** (``8xH100``, ``H100 spot``, ``a100-80gb on aws in
us-east``) or, when it does not start with a GPU, a **workload** in gpufit's usual words
(``13B full finetune 2 days``), parsed by :func:`recommender.parse_workload`.

Units: ``/h`` (``/hr``, ``/hour``, ``per hour``) prices the instance — for a multi-node count,
the whole cluster; ``/gpu-hour`` (``/gpu-h``, ``/gpu/h``, ``per gpu hour``, ``/gpu``) prices
one GPU. No unit means ``/h`` for an offer query and the whole run for a workload.

Provider and region words are read by the workload parser (the one place that knows their
spellings), so ``on amazon in europe`` means here what it means in ``/gpufit ask``.
"""

from __future__ import annotations

import math
import re

from bot.alerts.model import (
    MAX_GPUS,
    ImpossibleWatchError,
    OfferQuery,
    PriceBasis,
    Threshold,
    WatchSpec,
    WatchSyntaxError,
)
from recommender import (
    GpufitError,
    SpotPolicy,
    Workload,
    normalize,
    parse_workload,
    try_normalize,
)

__all__ = ["parse_watch"]

#: Smallest threshold: a price below one cent is shown as $0.00 and no offer is that cheap.
MIN_THRESHOLD_USD = 0.01
#: Largest threshold: above any real price or run budget (and finite: 400 nines are ``inf``).
MAX_THRESHOLD_USD = 100_000_000.0  # ours: $100M, far above any training run

#: Longest accepted watch text; a watch fits in a sentence.
MAX_CHARS = 500  # ours: the slash-command text a person types, with room to spare

_COMPARE = r"below|under|less than|cheaper than|at most|at or below|<=|<|≤"
_AMOUNT = (
    r"(?:us)?\$\s*(?P<a1>\d[\d,]*(?:\.\d+)?)\s*(?P<k1>k)?"
    r"|(?P<a2>\d[\d,]*(?:\.\d+)?)\s*(?P<k2>k)?\s*(?:\$|usd|dollars)?"
)
_GPU_UNIT = r"(?:/|per |an? |each )\s*gpu(?:[- /]?(?:hours?|hrs?|h))?|/gpuh"
_HOUR_UNIT = r"(?:/|per |an? )\s*(?:hours?|hrs?|h)"
_TAIL = re.compile(
    rf"^(?P<what>.+?)\s+(?P<op>{_COMPARE})\s*(?:{_AMOUNT})\s*"
    rf"(?P<unit>{_GPU_UNIT}|(?:{_HOUR_UNIT})(?:\s*(?:per|/)\s*gpu)?)?"
    r"(?P<daily>\s+(?:with\s+(?:a\s+)?)?daily(?:\s+digest)?)?\s*$",
    re.IGNORECASE,
)
_COUNT_PREFIX = re.compile(r"^(?P<n>\d{1,5})\s*(?:[x×*]\s*|\s+)(?P<rest>\S.*)$", re.IGNORECASE)
_COUNT_SUFFIX = re.compile(r"^[x×*](?P<n>\d{1,5})$", re.IGNORECASE)
_SPOT_WORDS = {"spot": True, "preemptible": True, "on-demand": False, "ondemand": False}
#: How many words a GPU spelling may take (``a100 80gb sxm``).
_GPU_WORDS = 3


def parse_watch(text: str) -> WatchSpec:
    """Understand one watch.

    Raises:
        WatchSyntaxError: no comparison and amount, or words that mean nothing here.
        ImpossibleWatchError: a threshold of zero, or a GPU count out of range.
        UnknownGpuError: the GPU is not one gpufit knows (with suggestions).
        WorkloadError: the workload part could not be understood.
    """
    cleaned = " ".join(text.split())
    if len(cleaned) > MAX_CHARS:
        raise WatchSyntaxError(f"That watch is too long ({len(cleaned)} characters).")
    cleaned = re.sub(r"^watch\s+", "", cleaned, flags=re.IGNORECASE)
    m = _TAIL.match(cleaned)
    if m is None:
        raise WatchSyntaxError(
            "I could not find the price to watch for: say `below $20/h`, "
            "`under $2/gpu-hour` or, for a workload, `under $4000`."
        )
    amount = _amount(m)
    if not math.isfinite(amount) or amount > MAX_THRESHOLD_USD:
        raise ImpossibleWatchError(
            f"That threshold is too high to mean anything (over ${MAX_THRESHOLD_USD:,.0f}).",
            hint="Try: watch 8xH100 below $20/h",
        )
    if amount < MIN_THRESHOLD_USD:
        raise ImpossibleWatchError(
            f"A threshold of {m.group('a1') or m.group('a2')} can never be reached: "
            "prices are above zero.",
            hint="Try: watch 8xH100 below $20/h",
        )
    unit = (m.group("unit") or "").lower()
    basis: PriceBasis | None
    if not unit:
        basis = None
    elif "gpu" in unit:
        basis = PriceBasis.GPU_HOUR
    else:
        basis = PriceBasis.INSTANCE_HOUR
    daily = m.group("daily") is not None
    what = m.group("what").strip()

    query = _offer_query(what)
    if query is not None:
        assumed: tuple[str, ...] = ()
        if basis is None:
            basis = PriceBasis.INSTANCE_HOUR
            assumed = ("price per hour for the whole instance (say `/gpu-hour` for one GPU)",)
        return WatchSpec(
            threshold=Threshold(amount, basis),
            query=query,
            daily_digest=daily,
            assumed=assumed,
        )
    try:
        workload = parse_workload(what)
    except GpufitError:
        if basis is None:
            raise
        raise WatchSyntaxError(
            f"A price per hour needs a GPU to watch, and {what.split()[0]!r} is not one.",
            hint='Try: "watch 8xH100 below $20/h" or "watch a100-80gb on aws below $30/h"',
        ) from None
    if basis is not None:
        raise WatchSyntaxError(
            "A workload watch takes a budget for the whole run, not a price per hour.",
            hint=f'Try: "watch {what} under $4000" (or watch a GPU: "watch 8xH100 below $20/h")',
        )
    if workload.budget_usd is not None:
        raise WatchSyntaxError(
            "Say the budget once, as the threshold: the watch fires when the run costs at "
            "most that much.",
            hint=f'Try: "watch {workload.text or what} under ${workload.budget_usd:,.0f}"',
        )
    return WatchSpec(
        threshold=Threshold(amount, PriceBasis.RUN),
        workload_text=what,
        daily_digest=daily,
    )


def _amount(m: re.Match[str]) -> float:
    raw = m.group("a1") or m.group("a2")
    value = float(raw.replace(",", ""))
    if m.group("k1") or m.group("k2"):
        value *= 1000
    return value


def _offer_query(what: str) -> OfferQuery | None:
    """An offer query when ``what`` starts with a GPU; ``None`` when it reads as a workload.

    A first word shaped like a GPU model that is not one (``H900``) is an unknown GPU.
    """
    count: int | None = None
    rest = what
    cm = _COUNT_PREFIX.match(what)
    if cm is not None:
        count = int(cm.group("n"))
        rest = cm.group("rest")
    words = rest.split()
    gpu_id, used = _gpu_prefix(words)
    if gpu_id is None:
        if _looks_like_gpu(words[0]):
            normalize(words[0])  # raises UnknownGpuError with suggestions
        return None
    words = words[used:]
    if words and (sm := _COUNT_SUFFIX.match(words[0])) is not None and count is None:
        count = int(sm.group("n"))
        words = words[1:]
    if count is not None and not 1 <= count <= MAX_GPUS:
        raise ImpossibleWatchError(
            f"{count} GPUs is outside what any offer provides (1 to {MAX_GPUS}).",
            hint=f"Try: watch 8x{words[0] if words else 'H100'} below $20/h",
        )
    spot: bool | None = None
    place_words: list[str] = []
    i = 0
    while i < len(words):
        word = words[i].lower()
        if word == "on" and i + 1 < len(words) and words[i + 1].lower() == "demand":
            word, i = "on-demand", i + 1
        if word in _SPOT_WORDS:
            spot = _combine_spot(spot, _SPOT_WORDS[word])
        elif word == "only":
            pass
        else:
            place_words.append(words[i])
        i += 1
    providers: frozenset[str] = frozenset()
    regions: tuple[str, ...] = ()
    if place_words:
        place = " ".join(place_words)
        try:
            # A stand-in workload lets the workload parser read the provider and region words.
            probe = parse_workload(f"1B lora {place}")
        except GpufitError:
            probe = None
        leftover = _leftover(probe, place)
        if probe is None or leftover or probe.spot is not SpotPolicy.ALLOW:
            raise WatchSyntaxError(
                f"I did not understand {leftover or place!r} in that watch.",
                hint="An offer watch takes a GPU, an optional count, `spot` or `on-demand`, "
                "`on <provider>` and `in <region>`: "
                '"watch 8xH100 spot on aws in us-east below $20/h"',
            )
        providers, regions = probe.providers, probe.regions
    return OfferQuery(
        gpu_id=gpu_id,
        gpu_count=count,
        providers=providers,
        regions=regions,
        spot=spot,
        place=" ".join(place_words),
    )


def _leftover(probe: Workload | None, place: str) -> str:
    """Words of ``place`` the probe did not take as a provider or region."""
    if probe is None or probe.hardware is not None:
        return place
    return " ".join(probe.ignored)


def _combine_spot(current: bool | None, new: bool) -> bool:
    if current is not None and current != new:
        raise WatchSyntaxError(
            "A watch is for spot or on-demand offers (or both when you say neither), "
            "not spot and on-demand at once.",
            hint='Try: "watch H100 spot under $2/gpu-hour"',
        )
    return new


def _gpu_prefix(words: list[str]) -> tuple[str | None, int]:
    """The longest run of leading words (up to three) that names a GPU."""
    for n in range(min(_GPU_WORDS, len(words)), 0, -1):
        gpu_id = try_normalize(" ".join(words[:n]))
        if gpu_id is not None:
            return gpu_id, n
    return None, 0


def _looks_like_gpu(word: str) -> bool:
    """A word shaped like an accelerator model (letters then digits: H900, MI400, A5000)."""
    return re.fullmatch(r"[a-z]{1,4}-?\d{2,5}[a-z0-9-]*", word, re.IGNORECASE) is not None
