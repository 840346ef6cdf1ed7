"""The "Launch files" button: the clicked option's task.yaml and accelerate.yaml.

The button's value carries the question, the option's rank, how many options the answer
showed and the offer's key (:func:`bot.render.blocks.encode_launch_value`); the option is
recomputed from them and checked against the key, so a refreshed catalog never hands out the
files of a different offer than the one clicked. A key an earlier version wrote (no GPUs in
it) is read too (:func:`recommender.offers_for_key`).
"""

from __future__ import annotations

from bot.listeners.answers import MAX_QUERY_CHARS, off_loop
from bot.render.blocks import decode_launch_value, render_notice
from bot.render.launch import render_launch_files
from bot.render.limits import Message
from bot.services import Services
from recommender import (
    launch_command,
    launch_files,
    launch_spec,
    offers_for_key,
    parse_workload,
    recommend,
)

__all__ = ["MAX_TOP", "launch_message"]

#: The most options a launch button may ask to recompute (a value is only a request).
MAX_TOP = 100


async def launch_message(services: Services, value: str) -> Message:
    """The launch files of the option a button names, or a notice saying why not.

    Raises:
        WorkloadError: the question in the value cannot be understood.
    """
    query, rank, top, offer_key = decode_launch_value(value)
    if not query or len(query) > MAX_QUERY_CHARS or not 1 <= rank <= top <= MAX_TOP:
        return render_notice("This button is out of date; ask the question again.")
    now = services.now()
    workload = parse_workload(query, now=now)
    catalog = await services.catalog()
    rec = await off_loop(services, recommend, workload, catalog, now=now, top=top)
    named = offers_for_key(offer_key, [o.offer for o in rec.options])
    same = [o for o in rec.options if o.offer in named]
    # At another rank only when the key names one offer (an earlier version's key, without
    # the GPUs, can name several on one host type).
    one = len({o.key for o in named}) == 1
    option = next((o for o in same if o.rank == rank), same[0] if one else None)
    if option is None:
        return render_notice(
            f"Option {rank} is no longer offered: prices were refreshed since this answer. "
            "Ask again for the current options."
        )
    spec = launch_spec(workload, option)
    if spec.unsupported:  # no framework gpufit writes configs for runs this plan as priced
        return render_notice(f"No launch files for option {rank}. {spec.unsupported}")
    files = launch_files(spec, query=query)
    return render_launch_files(option, files, query=query, command=launch_command(spec))
