"""Price alerts: ``/gpufit watch``, ``watches``, ``unwatch`` and the "Watch price" button.

Thin, like every listener: parse the watch, check it can ever fire against the current
prices, store it for this workspace and channel, and answer. Errors are ``GpufitError``s and
reach the one error handler (:mod:`bot.listeners.errors`). The worker does the rest.

Answers: a new or removed watch is announced in the channel (alerts will appear there, so the
channel should know why); a listing is shown only to the person who asked.
"""

from __future__ import annotations

from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.alerts import (
    OfferQuery,
    PriceBasis,
    Threshold,
    WatchSpec,
    WatchStore,
    WatchSyntaxError,
    check_watch,
    parse_watch,
    render_confirmation,
    render_watches,
)
from bot.listeners.answers import off_loop
from bot.render.blocks import render_notice
from bot.render.limits import Message
from bot.services import Services
from recommender import Catalog, Offer, offers_for_key

__all__ = [
    "BUTTON_DROP_FRAC",
    "WATCH_SUBCOMMANDS",
    "handle_watch_button",
    "handle_watch_command",
]

WATCH_SUBCOMMANDS = frozenset({"watch", "watches", "unwatch"})

#: The "Watch price" button watches for this much below the offer's current price.
BUTTON_DROP_FRAC = 0.10  # ours: a 10 % cut is worth a ping; anything less is routine jitter

_WATCH_HELP = (
    "Say what to watch and the price: `/gpufit watch 8xH100 below $20/h`, "
    "`/gpufit watch H100 spot under $2/gpu-hour` or "
    "`/gpufit watch 13B full finetune 2 days under $4000` (add `daily` for a daily digest); "
    "`/gpufit watch enable W3` turns a disabled watch back on."
)


def _where(context: AsyncBoltContext) -> tuple[str, str, str]:
    """(team, channel, user) of a slash command or a block action, as Bolt read them."""
    return context.team_id or "", context.channel_id or "", context.user_id or ""


async def _reply(respond: AsyncRespond, message: Message, *, public: bool) -> None:
    await respond(
        response_type="in_channel" if public else "ephemeral",
        replace_original=False,
        **message.kwargs(),
    )


async def handle_watch_command(
    subcommand: str,
    args: str,
    *,
    context: AsyncBoltContext,
    respond: AsyncRespond,
    services: Services,
) -> None:
    """``/gpufit watch|watches|unwatch ARGS`` (already acknowledged)."""
    team, channel, user = _where(context)
    store = WatchStore(services.redis)
    args = args.strip()
    if subcommand == "watches":
        watches = await store.list_channel(team, channel)
        listed = [(w, await store.state(w.id)) for w in watches]
        await _reply(respond, render_watches(listed), public=False)
        return
    if subcommand == "unwatch":
        if not args:
            raise WatchSyntaxError(
                "Say which watch to remove.",
                hint="Try: `/gpufit unwatch W3` (see `/gpufit watches`)",
            )
        removed = await store.remove(team, channel, args.split()[0])
        text = f"Stopped watching {removed.spec.label()} (`{removed.id}`)."
        await _reply(respond, render_notice(text), public=True)
        return
    if not args:
        raise WatchSyntaxError("What should I watch?", hint=_WATCH_HELP)
    first, _, rest = args.partition(" ")
    if first.lower() == "enable":
        if not rest.strip():
            raise WatchSyntaxError(
                "Say which watch to enable.",
                hint="Try: `/gpufit watch enable W3` (see `/gpufit watches`)",
            )
        enabled = await store.enable(team, channel, rest.split()[0])
        text = f"Watching {enabled.spec.label()} (`{enabled.id}`) again."
        await _reply(respond, render_notice(text), public=True)
        return
    spec = parse_watch(args)
    catalog = await services.catalog()
    current = await off_loop(services, check_watch, spec, catalog, now=services.now())
    watch = await store.add(
        team_id=team,
        channel_id=channel,
        created_by=user,
        spec=spec,
        text=args,
        now=services.now(),
        current=current,
    )
    await _reply(respond, render_confirmation(watch, current), public=True)


def _find(catalog: Catalog, offer_key: str) -> tuple[Offer, ...]:
    """The offers a button's key names: one, none, or several for a key an earlier version
    wrote (no GPUs in it) on a host type that carries several GPU models."""
    return offers_for_key(offer_key, catalog.offers)


async def handle_watch_button(
    *,
    query: str,
    offer_key: str,
    context: AsyncBoltContext,
    respond: AsyncRespond,
    services: Services,
) -> None:
    """A click on "Watch price" for ``offer_key`` in the answer to ``query`` (acknowledged,
    and claimed once per user and message, so a double click arrives here once).

    Watches that exact shape (GPU, count, provider, region, spot or not) for a price
    :data:`BUTTON_DROP_FRAC` below today's.
    """
    team, channel, user = _where(context)
    catalog = await services.catalog()
    found = await off_loop(services, _find, catalog, offer_key)
    if len(found) != 1:
        why = (
            "That offer is no longer in the price list."
            if not found
            else "This button is from an answer an earlier gpufit posted, and its instance "
            "type now comes with several GPU models: it cannot tell which one you saw."
        )
        await _reply(
            respond,
            render_notice(f"{why} Ask again, or set a watch yourself: {_WATCH_HELP}"),
            public=False,
        )
        return
    [offer] = found
    threshold_usd = round(offer.price_usd_per_hour * (1 - BUTTON_DROP_FRAC), 2)
    kind = offer.kind
    place = f"on {offer.provider} in {offer.region}"
    spec = WatchSpec(
        threshold=Threshold(threshold_usd, PriceBasis.INSTANCE_HOUR),
        query=OfferQuery(
            gpu_id=offer.gpu_id,
            gpu_count=offer.gpu_count,
            providers=frozenset({offer.provider}),
            regions=(offer.region.lower(),),
            spot=offer.spot,
            place=place,
        ),
        assumed=(
            f"{BUTTON_DROP_FRAC:.0%} below today's price; say "
            f"`/gpufit watch {offer.gpu_count}x{offer.gpu_id} {kind} {place} below $X/h` "
            "for another threshold",
        ),
    )
    current = await off_loop(services, check_watch, spec, catalog, now=services.now())
    watch = await WatchStore(services.redis).add(
        team_id=team,
        channel_id=channel,
        created_by=user,
        spec=spec,
        text=f"{spec.label()} (from the answer to “{query[:200]}”)",
        now=services.now(),
        current=current,
    )
    await _reply(respond, render_confirmation(watch, current), public=True)
