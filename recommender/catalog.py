"""The catalog: every offer gpufit knows of, with its provenance and its sanity screen.

The price sanity checks (:mod:`recommender.sanity`) depend on the whole catalog (a price is
an outlier against its instance's median across regions), so they run once, when a catalog
is made (:meth:`Catalog.of`), and every question reads the offers they keep and the caveats
they attach. ``offers`` stays the catalog as listed, for the faces that list prices.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recommender.offers import Offer, SourceInfo
from recommender.sanity import Screened, screen

__all__ = ["Catalog"]


@dataclass(frozen=True, slots=True)
class Catalog:
    """All offers gpufit knows of, with their provenance. Make one with :meth:`of`."""

    #: Every offer as listed, in source order.
    offers: tuple[Offer, ...]
    sources: tuple[SourceInfo, ...]
    #: What the sanity checks keep (with their caveats) and drop: what recommendations read.
    screened: Screened

    @classmethod
    def of(cls, offers: Iterable[Offer], sources: Sequence[SourceInfo] = ()) -> Catalog:
        listed = tuple(offers)
        return cls(listed, tuple(sources), screen(listed))

    def __len__(self) -> int:
        return len(self.offers)
