"""``AnswerCache``: answers reused for one catalog object, for a bounded time and number."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.answer_cache import ANSWER_TTL_S, AnswerCache
from bot.catalog import bundled_catalog
from recommender import Catalog
from tests.factories import NOW


@pytest.fixture
def catalog() -> Catalog:
    return bundled_catalog()


class TestAnswerCache:
    def test_a_stored_value_is_found_for_the_same_key_and_catalog(self, catalog: Catalog) -> None:
        cache: AnswerCache[str] = AnswerCache()
        assert cache.get("q", catalog, NOW) is None
        cache.put("q", catalog, NOW, "answer")
        assert cache.get("q", catalog, NOW + timedelta(seconds=1)) == "answer"
        assert (cache.hits, cache.misses) == (1, 1)

    def test_a_new_catalog_object_empties_the_cache(self, catalog: Catalog) -> None:
        """A refresh replaces the catalog object: nothing computed from the old one is served,
        even when the offers are equal."""
        cache: AnswerCache[str] = AnswerCache()
        cache.get("q", catalog, NOW)
        cache.put("q", catalog, NOW, "answer")
        fresh = Catalog(catalog.offers, catalog.sources)
        assert cache.get("q", fresh, NOW) is None
        assert len(cache) == 0

    def test_a_value_computed_from_a_replaced_catalog_is_not_stored(self, catalog: Catalog) -> None:
        """An answer that was being computed while a newer catalog arrived is dropped."""
        cache: AnswerCache[str] = AnswerCache()
        cache.get("q", catalog, NOW)  # the question starts on the old catalog ...
        fresh = Catalog(catalog.offers, catalog.sources)
        cache.get("other", fresh, NOW)  # ... another arrives on the new one ...
        cache.put("q", catalog, NOW, "old answer")  # ... and the first one finishes
        assert cache.get("q", fresh, NOW) is None

    def test_entries_expire_after_the_ttl(self, catalog: Catalog) -> None:
        """The footer shows the prices' age, so an answer is reused for a minute at most."""
        cache: AnswerCache[str] = AnswerCache()
        cache.get("q", catalog, NOW)
        cache.put("q", catalog, NOW, "answer")
        almost = NOW + timedelta(seconds=ANSWER_TTL_S - 0.001)
        assert cache.get("q", catalog, almost) == "answer"
        assert cache.get("q", catalog, NOW + timedelta(seconds=ANSWER_TTL_S)) is None
        assert cache.get("q", catalog, NOW - timedelta(seconds=1)) is None  # clock went back

    def test_the_least_recently_used_entry_goes_first(self, catalog: Catalog) -> None:
        cache: AnswerCache[str] = AnswerCache(size=2)
        cache.get("a", catalog, NOW)
        for key in ("a", "b"):
            cache.put(key, catalog, NOW, key.upper())
        assert cache.get("a", catalog, NOW) == "A"  # "a" is now the most recent
        cache.put("c", catalog, NOW, "C")
        assert len(cache) == 2
        assert cache.get("b", catalog, NOW) is None
        assert cache.get("a", catalog, NOW) == "A"
        assert cache.get("c", catalog, NOW) == "C"

    @pytest.mark.parametrize(("size", "ttl_s"), [(0, 60.0), (10, 0.0), (10, -1.0)])
    def test_a_cache_that_could_hold_nothing_is_refused(self, size: int, ttl_s: float) -> None:
        with pytest.raises(ValueError, match="at least one entry"):
            AnswerCache[str](size=size, ttl_s=ttl_s)
