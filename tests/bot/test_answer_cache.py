"""``AnswerCache``: answers reused for one catalog object, for a bounded time and number."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import replace
from datetime import timedelta

import pytest
from slack_bolt.async_app import AsyncApp

from bot.answer_cache import ANSWER_TTL_S, AnswerCache
from bot.catalog import bundled_catalog
from bot.listeners.answers import answer
from bot.services import Services, static_catalog
from recommender import Catalog
from tests.bot.slack_requests import FORM, JSON, action_body, command_body, mention_body, request
from tests.factories import NOW
from tests.fake_slack import FakeSlack


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
        fresh = Catalog.of(catalog.offers, catalog.sources)
        assert cache.get("q", fresh, NOW) is None
        assert len(cache) == 0

    def test_a_value_computed_from_a_replaced_catalog_is_not_stored(self, catalog: Catalog) -> None:
        """An answer that was being computed while a newer catalog arrived is dropped."""
        cache: AnswerCache[str] = AnswerCache()
        cache.get("q", catalog, NOW)  # the question starts on the old catalog ...
        fresh = Catalog.of(catalog.offers, catalog.sources)
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


class TestSharedBlocks:
    async def test_a_cached_answer_is_unchanged_by_every_way_it_is_sent(
        self, app: AsyncApp, fake_slack: FakeSlack, services: Services
    ) -> None:
        """Cached messages share their block dicts with every send (no copies), so
        ``respond`` (the command's and the button's) and ``chat.postMessage`` must leave them
        as they were."""
        query = "13B lora 1 day"
        ephemeral = await answer(services, query, top=5, ephemeral=True)
        public = await answer(services, query, top=5, ephemeral=False)
        before = copy.deepcopy((ephemeral.message, public.message))
        command = command_body(query, response_url=fake_slack.hook_url("cmd"))
        await app.async_dispatch(request(command, FORM))  # respond(ephemeral)
        [answered] = await fake_slack.wait_for("hook:cmd")
        assert answered.body["blocks"] == list(ephemeral.message.blocks)
        click = action_body("gpufit_post", query, response_url=fake_slack.hook_url("post"))
        await app.async_dispatch(request(click, FORM))  # respond(in_channel)
        mention = mention_body(query, event_id="EvShared", ts="1700000000.000700")
        await app.async_dispatch(request(mention, JSON))  # chat.postMessage
        [hook] = await fake_slack.wait_for("hook:post")
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert hook.body["blocks"] == post.body["blocks"] == list(public.message.blocks)
        assert await answer(services, query, top=5, ephemeral=False) is public  # still cached
        assert (ephemeral.message, public.message) == before


class TestConcurrentAnswers:
    QUESTIONS = (
        "34B full finetune 3 days",
        "llama 70b lora on 8x H100",
        "qwen 14b qlora on 500M tokens under $800",
        "gpt2 1.5b pretrain on 30B tokens",
        "mistral-7b full finetune 36 hours spot only",
        "8B full finetune seq 8k no spot",
    )

    async def test_answers_computed_in_parallel_threads_equal_sequential_ones(
        self, services: Services
    ) -> None:
        """Answers run in worker threads, several at once, on a catalog whose index none has
        built yet: each equals the answer computed alone on a fresh copy of the catalog."""
        offers, sources = bundled_catalog().offers, bundled_catalog().sources
        services = replace(services, catalog=static_catalog(Catalog.of(offers, sources)))
        together = await asyncio.gather(
            *(answer(services, q, top=5, ephemeral=True) for q in self.QUESTIONS * 3)
        )
        for q, got in zip(self.QUESTIONS * 3, together, strict=True):
            alone = Services(
                redis=services.redis,
                catalog=static_catalog(Catalog.of(offers, sources)),
                now=services.now,
                client=services.client,
            )
            assert got == await answer(alone, q, top=5, ephemeral=True), q
