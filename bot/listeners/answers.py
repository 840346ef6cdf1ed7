"""The one service the listeners call: a question (and its refinements) in, a message out.

Slack-side text handling lives here too (:func:`slack_text`, the one place gpufit decodes
Slack's markup): Slack sends ``&``, ``<`` and ``>`` as entities, mentions as ``<@U…>`` and links
as ``<url|label>``; the parser wants the words the user typed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, tzinfo
from typing import ParamSpec, TypeVar

from bot.answer_cache import Answer
from bot.logs import redact_known_secrets
from bot.metrics import Metrics
from bot.render.blocks import render_recommendation
from bot.render.limits import Message
from bot.render.prices import render_prices
from bot.render.short import render_short
from bot.services import Services
from recommender import (
    Catalog,
    WorkloadError,
    gpu_prices,
    parse_workload,
    recommend,
    split_gpus,
)

__all__ = [
    "Answer",
    "answer",
    "off_loop",
    "prices",
    "refine",
    "slack_text",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: Longest question gpufit accepts (the parser's own limit; also a button value's).
MAX_QUERY_CHARS = 2000

#: Follow-ups whose plain meaning differs from the parser's reading of the same words alone:
#: "what about spot?" asks to see spot prices, where "spot" alone only allows them.
_FOLLOW_UP_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b(?:what|how)\s+about\s+(?:using\s+)?(?:spot|preemptible)(?:\s+instances?)?\b",
            re.IGNORECASE,
        ),
        "spot only",
    ),
    (
        re.compile(r"\b(?:what|how)\s+about\s+on[- ]demand\b", re.IGNORECASE),
        "on-demand only",
    ),
)


#: Mentions: users ``<@U123>`` (the bot's own included), ``<@U123|bob>``, channels
#: ``<#C1|general>``, specials ``<!channel>``, ``<!here>``, ``<!subteam^S1>``, dates ``<!date…>``.
_MENTION = re.compile(r"<[@!#][^<>]*>")
#: Links: ``<https://x.example|label>`` keeps its label, ``<https://x.example>`` its URL.
_LINK = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")


def slack_text(raw: str) -> str:
    """The words a user typed, from Slack's wire format ("Formatting text for app surfaces":
    api.slack.com/reference/surfaces/formatting).

    Mentions are dropped, links keep their label (or URL), then the three entities Slack
    encodes are decoded: ``&lt;``, ``&gt;`` and, last, ``&amp;`` (so a typed ``&lt;`` stays
    ``&lt;``). Only ``<…>`` is markup: a ``<`` the user typed arrives as ``&lt;``, so it is
    decoded after the markup is gone and never read as markup. Secrets of known formats (a
    pasted AWS key, a GitHub token) are redacted, so no answer echoes them and no store or log
    keeps them.
    """
    text = _MENTION.sub(" ", raw)
    text = _LINK.sub(lambda m: f" {m.group(2) or m.group(1)} ", text)
    text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return redact_known_secrets(" ".join(text.split()))


def refine(previous: str, follow_up: str) -> str:
    """The follow-up merged into the question it refines.

    The follow-up goes first: the parser keeps the first value stated for a field, so what the
    user says now overrides what they said before ("and with a $5k budget?" after "$3k").
    """
    words = follow_up
    for pattern, meaning in _FOLLOW_UP_REWRITES:
        words = pattern.sub(meaning, words)
    return f"{words.strip()} {previous.strip()}".strip()


#: A model to complete a follow-up with, only to learn which of its words the parser ignores.
_PLACEHOLDER_MODEL = "llama-3-8b"


def _not_understood(follow_up: str) -> frozenset[str]:
    """The words of a follow-up that the parser ignores when it reads it on its own."""
    try:
        alone = parse_workload(f"{_PLACEHOLDER_MODEL} {follow_up}")
    except WorkloadError:
        return frozenset()
    return frozenset(w for w in alone.ignored if w != _PLACEHOLDER_MODEL)


async def answer(
    services: Services,
    question: str,
    *,
    follow_up: str | None = None,
    top: int,
    ephemeral: bool,
    zone: tzinfo | None = None,
    details: bool = False,
) -> Answer:
    """Parse, recommend and render: the ranked answer to ``question`` (refined by ``follow_up``).

    The same question asked of the same catalog within a minute is answered from
    ``services.answers``. Otherwise the CPU-bound work (parse, recommend, render) runs in the
    scan thread (:func:`off_loop`), so the event loop keeps acknowledging other requests.

    Raises:
        WorkloadError: the text (or the merged thread question) cannot be understood.
    """
    query = _query(question, follow_up)
    catalog = await services.catalog()
    now = _local(services.now(), zone)
    key = (question, follow_up, top, ephemeral, str(now.tzinfo), details)
    cached = services.answers.get(key, catalog, now)
    if cached is not None:
        return cached
    args = (query, follow_up, catalog, now, top, ephemeral, services.metrics, details)
    result = await off_loop(services, _compute, *args)
    services.answers.put(key, catalog, now, result)
    return result


def _local(now: datetime, zone: tzinfo | None) -> datetime:
    """``now`` in the asker's time zone (deadlines such as "by Friday" are read in it)."""
    return now if zone is None else now.astimezone(zone)


def _query(question: str, follow_up: str | None) -> str:
    """The question, refined by the follow-up; refused when it has grown too long."""
    query = refine(question, follow_up) if follow_up else question
    if len(query) > MAX_QUERY_CHARS:
        raise WorkloadError(
            "This question has grown too long to refine further.",
            hint="Start a new thread with the whole question in one message.",
        )
    return query


def _compute(
    query: str,
    follow_up: str | None,
    catalog: Catalog,
    now: datetime,
    top: int,
    ephemeral: bool,
    metrics: Metrics | None,
    details: bool = False,
) -> Answer:
    workload = parse_workload(query, now=now)
    if follow_up:
        # Words of the earlier question that the follow-up overrides are not "not understood".
        unclear = _not_understood(follow_up)
        workload = replace(workload, ignored=tuple(w for w in workload.ignored if w in unclear))
    timer = metrics.time_recommendation() if metrics is not None else contextlib.nullcontext()
    with timer:
        # A chat answer shows the per-GPU layouts only when no option can be shown.
        rec = recommend(workload, catalog, now=now, top=top, layouts=False)
    # The short answer first (issue #39); the Details button asks for the whole of it.
    render = render_recommendation if details else render_short
    return Answer(query, render(rec, query=query, ephemeral=ephemeral))


async def prices(services: Services, gpu_text: str) -> Message:
    """The cheapest offers for each GPU named in ``gpu_text`` ("H100 L4").

    Raises:
        WorkloadError: no GPU named, or too many; UnknownGpuError: a GPU gpufit does not know.
    """
    if not gpu_text.strip():
        raise WorkloadError("Which GPU?", hint="Try: /gpufit prices H100 L4")
    gpu_ids = split_gpus(gpu_text.split())
    catalog = await services.catalog()
    return await off_loop(services, _prices, gpu_ids, catalog, services.now())


def _prices(gpu_ids: Sequence[str], catalog: Catalog, now: datetime) -> Message:
    groups = [gpu_prices(gpu_id, catalog.offers) for gpu_id in gpu_ids]
    return render_prices(groups, catalog.sources, now=now)


async def off_loop(
    services: Services, fn: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs
) -> _R:
    """``fn(*args)``, CPU-bound work (an answer, a pass over the catalog), in
    ``services.scans``, the one scan thread; further work waits its turn in its queue, not on
    the event loop. Why: acks come first. Lazy listeners return no backpressure to Slack, so
    answers can pile up faster than they are computed; on the loop, 1,000 commands at
    concurrency 32 held it so long that keep-alive connections timed out under their next
    request (tests/reliability/test_load.py), and 20 ``prices`` scans of 200k offers delayed a
    ``help`` by 7.6 s."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(services.scans, functools.partial(fn, *args, **kwargs))
