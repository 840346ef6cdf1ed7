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
from dataclasses import dataclass
from datetime import datetime

from recommender.offers import Offer

__all__ = [
    "MAX_REPORTED_ERRORS",
    "NATIVE_FORMAT",
    "ParsedFeed",
    "looks_like_native",
]

#: The ``format`` marker of gpufit's own feed document (docs/feed-format.md).
NATIVE_FORMAT = "gpufit-feed"

#: How many rejection reasons a ParsedFeed keeps; why: enough to diagnose a broken publisher,
#: few enough that a 10k-row feed with a systematic fault does not flood logs or Slack.
MAX_REPORTED_ERRORS = 20


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
