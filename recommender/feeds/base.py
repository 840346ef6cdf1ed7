"""What every price-feed adapter returns, and how gpufit tells the formats apart.

Each adapter (gpufit's own JSON, SkyPilot catalog CSV, gpuhunt catalog CSV) turns one document
into a :class:`ParsedFeed`: the offers it could read plus an account of the rows it could not.
A bad row never sinks the whole load; it is counted in :attr:`ParsedFeed.rejected` and its
reason kept (the first few) in :attr:`ParsedFeed.errors`, so ``gpufit feed status`` can say
"312 rows, 3 rejected: row 17: unknown GPU 'H900'".

Format detection is by content, not by file name or URL: a feed may be served as
``prices.json`` or as ``/latest`` with any content type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache

from recommender.gpus import GpuSpec, get_gpu, try_normalize
from recommender.pricing.offers import Offer

__all__ = [
    "MAX_REPORTED_ERRORS",
    "MAX_USD_PER_GPU_HOUR",
    "MIN_USD_PER_GPU_HOUR",
    "NATIVE_FORMAT",
    "ParsedFeed",
    "RowError",
    "looks_like_native",
    "owned_by",
    "resolve_gpu",
]

#: The ``format`` marker of gpufit's own feed document (docs/feed-format.md).
NATIVE_FORMAT = "gpufit-feed"

#: How many rejection reasons a ParsedFeed keeps; why: enough to diagnose a broken publisher,
#: few enough that a 10k-row feed with a systematic fault does not flood logs or Slack.
MAX_REPORTED_ERRORS = 20

#: Lowest believable price per GPU-hour; why: the cheapest marketplace GPUs (T4, RTX 3060)
#: rent for a few cents an hour, so anything below a cent is a unit error or a placeholder.
MIN_USD_PER_GPU_HOUR = 0.01

#: Highest believable price per GPU-hour; why: the dearest on-demand list price (B300/B200 on a
#: hyperscaler) is under $20/GPU-hour, so 100 leaves headroom yet catches per-month or per-cents
#: prices and catalog sentinels such as SkyPilot's 700.0 for unavailable TPU zones.
MAX_USD_PER_GPU_HOUR = 100.0

#: Relative slack when comparing a stated GPU memory with the spec table, against both the
#: label in GiB and the label read as GiB (publishers mix up GB and GiB: 80 GB = 74.5 GiB).
#: Ours; why: in the real SkyPilot rows under tests/feeds/data every genuine listing is within
#: 3.5 % of one of the two (OCI's GB300 278 GiB for 288 GB; GB200 192 for 186), while the two
#: mislabelled ones are further off (Mithril's H200 at 150 GiB, 6.4 %; Spheron's "H100_NVL" at
#: 80 GiB, 8.6 % under the 94 GB card): such a row is rejected, never relabelled. The planner
#: takes memory from the GPU table in any case, never from the listing.
_MEMORY_TOLERANCE = 0.05

#: Distinct (name, memory, PCIe) inputs remembered; why: a feed names a few dozen GPU variants,
#: repeated on every row, and the spec table never changes.
_RESOLVE_CACHE_SIZE = 4096


class RowError(ValueError):
    """One offer row could not be read; the message says why (without the row number)."""


@dataclass(frozen=True, slots=True)
class ParsedFeed:
    """The outcome of parsing one feed document."""

    #: The offers that passed validation, in document order.
    offers: tuple[Offer, ...]
    #: When the prices were collected, as the document states it (``None``: not stated).
    as_of: datetime | None
    #: Offer rows seen in the document, good and bad.
    rows: int
    #: Rows that were skipped because they could not be read.
    rejected: int
    #: Reasons for the first :data:`MAX_REPORTED_ERRORS` rejections ("row 17: unknown GPU 'H900'").
    errors: tuple[str, ...] = ()

    @property
    def accepted(self) -> int:
        """Rows that became offers."""
        return self.rows - self.rejected


def owned_by(offer: Offer, name: str) -> Offer:
    """The offer attributed to the source ``name`` (``Offer.source`` matches
    ``SourceInfo.name``); where the feed said it came from is kept as its ``citation``."""
    if offer.source == name:
        return offer
    return replace(offer, source=name, citation=offer.citation or offer.source)


# `{` then, within the first few keys, `"format": "gpufit-feed"`. JSON allows any key order and
# whitespace, so look for the marker pair anywhere in the head rather than at a fixed offset.
_NATIVE_MARKER = re.compile(r'"format"\s*:\s*"' + re.escape(NATIVE_FORMAT) + r'"')


def looks_like_native(head: str) -> bool:
    """Whether a document's first characters look like a gpufit feed.

    ``head`` is the start of the document (a few KiB is plenty: publishers put ``format``
    first, and this checks the whole head in any case). A byte-order mark and leading
    whitespace are ignored. This is a cheap sniff for choosing an adapter; the adapter itself
    still validates the document fully.
    """
    text = head.lstrip("\ufeff \t\r\n")
    return text.startswith("{") and _NATIVE_MARKER.search(text) is not None


def resolve_gpu(name: str, *, memory_gib: float | None = None, pcie: bool = False) -> str:
    """The canonical GPU id (see :mod:`recommender.gpus`) for a feed's GPU name.

    ``memory_gib`` (per GPU) picks the memory variant ("A100" with 80 GiB → A100 80GB) and
    ``pcie`` the PCIe form factor when the feed says so only in an instance or card name.

    Raises:
        RowError: the name is unknown, or no variant of it has that memory.
    """
    gpu_id, error = _resolve_gpu(name, memory_gib, pcie)
    if gpu_id is None:
        raise RowError(error)
    return gpu_id


@lru_cache(maxsize=_RESOLVE_CACHE_SIZE)
def _resolve_gpu(name: str, memory_gib: float | None, pcie: bool) -> tuple[str | None, str]:
    """``(gpu id, "")``, or ``(None, why not)``: pure, so remembered per distinct input."""
    # The name without a memory suffix ("A100-80GB" → "A100"), to name other variants by.
    stem = re.sub(r"[-_ ]?\d+\s*gb$", "", name.strip(), flags=re.IGNORECASE)
    labels: list[str] = []
    base = try_normalize(name)
    if base is not None:
        labels.append(f"{get_gpu(base).memory_gb:g}")
    if memory_gib is not None and stem == name.strip():
        # Memory picks the variant only when the name states none: "A100 40GB" with 80 GiB
        # is a contradiction, not an A100 80GB.
        labels += [f"{round(memory_gib)}", f"{round(memory_gib * 2**30 / 1e9)}"]
    candidates: list[str] = []
    if pcie:
        candidates += [f"{stem} PCIe {label}GB" for label in labels] + [f"{stem} PCIe"]
    candidates.append(name)
    candidates += [f"{stem} {label}GB" for label in labels]
    for candidate in dict.fromkeys(candidates):
        gpu_id = try_normalize(candidate)
        if gpu_id is None:
            continue
        if memory_gib is None or _memory_matches(get_gpu(gpu_id), memory_gib):
            return gpu_id, ""
    if base is None:
        return None, f"unknown GPU {name!r}"
    return None, (
        f"GPU memory {memory_gib:g} GiB does not match GPU {name!r} = {base} "
        f"({get_gpu(base).memory_gib:.1f} GiB) or a variant of it"
    )


def _memory_matches(spec: GpuSpec, memory_gib: float) -> bool:
    # Accept the GiB value, or the vendor's GB label written as GiB.
    return any(
        abs(memory_gib - reference) <= _MEMORY_TOLERANCE * reference
        for reference in (spec.memory_gib, spec.memory_gb)
    )
