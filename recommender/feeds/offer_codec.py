"""Offers as JSON: how a snapshot stores them in Redis (``recommender.feeds.cache``).

A snapshot is a JSON array of objects with ``Offer``'s fields in declaration order, enums as
their values. :func:`offers_json` writes exactly ``json.dumps`` of :func:`offer_to_dict` for
every offer, faster; :func:`offer_from_dict` reads one back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any

from recommender.gpus import IntraNode
from recommender.offers import Fabric, Offer

__all__ = ["offer_from_dict", "offer_to_dict", "offers_json"]


def offer_to_dict(offer: Offer) -> dict[str, Any]:
    """The offer's fields in declaration order, enums as their values (JSON-ready).

    Written out rather than ``dataclasses.asdict``, which deep-copies every value and cost
    ~13 µs an offer: most of a 20k-row snapshot write. ``tests/feeds/test_cache.py`` checks
    that the keys stay those of ``asdict``.
    """
    return {
        "provider": offer.provider,
        "instance_type": offer.instance_type,
        "gpu_id": offer.gpu_id,
        "gpu_count": offer.gpu_count,
        "price_usd_per_hour": offer.price_usd_per_hour,
        "spot": offer.spot,
        "region": offer.region,
        "zone": offer.zone,
        "gpu_memory_gib": offer.gpu_memory_gib,
        "vcpus": offer.vcpus,
        "ram_gib": offer.ram_gib,
        "intra_node": offer.intra_node.value if offer.intra_node else None,
        "fabric": offer.fabric.value,
        "fabric_gbps": offer.fabric_gbps,
        "source": offer.source,
        "citation": offer.citation,
    }


#: Where an encoded offer's varying part starts and ends; why: the four fields that differ
#: between offers of one instance shape (price, spot, region, zone) are adjacent in
#: ``Offer``'s field order, so the JSON text around them is one prefix and one suffix.
_VARYING_FROM = ',"price_usd_per_hour":'
_VARYING_UNTIL = ',"gpu_memory_gib":'


# What json.dumps writes for a float and for a str (its own encoders).
_float_repr = float.__repr__
_json_string = encode_basestring_ascii


#: json.dumps(..., separators=(",", ":")) without building an encoder per call.
_encode = json.JSONEncoder(separators=(",", ":")).encode


def _encode_offer(offer: Offer) -> str:
    return _encode(offer_to_dict(offer))


def offers_json(offers: Iterable[Offer]) -> str:
    """``json.dumps([offer_to_dict(o) for o in offers], separators=(",", ":"))``, the same
    text in about a third of the time for offers of a few instance shapes.

    Offers of one instance shape differ only in price, spot, region and zone, so the JSON
    text of their twelve other fields is encoded once per shape and only those four per
    offer. Equal values of different types (8 and 8.0) would be written differently, so a
    shape's text is reused only when those twelve fields are the very objects it was made
    from (as for offers built by :meth:`Offer.priced`); otherwise, and for a price, spot,
    region or zone of an unexpected type, the offer takes ``json.dumps``.
    """
    shapes: dict[tuple[Any, ...], tuple[Offer, str, str]] = {}
    encoded: list[str] = []
    for o in offers:
        key = (
            o.provider,
            o.instance_type,
            o.gpu_id,
            o.gpu_count,
            o.gpu_memory_gib,
            o.vcpus,
            o.ram_gib,
            o.intra_node,
            o.fabric,
            o.fabric_gbps,
            o.source,
            o.citation,
        )
        known = shapes.get(key)
        if known is None:
            text = _encode_offer(o)
            start = text.index(_VARYING_FROM) + len(_VARYING_FROM)
            shapes[key] = (o, text[:start], text[text.index(_VARYING_UNTIL) :])
            encoded.append(text)
            continue
        first, head, tail = known
        price, spot, region, zone = o.price_usd_per_hour, o.spot, o.region, o.zone
        if (
            o.provider is first.provider
            and o.instance_type is first.instance_type
            and o.gpu_id is first.gpu_id
            and o.gpu_count is first.gpu_count
            and o.gpu_memory_gib is first.gpu_memory_gib
            and o.vcpus is first.vcpus
            and o.ram_gib is first.ram_gib
            and o.intra_node is first.intra_node
            and o.fabric is first.fabric
            and o.fabric_gbps is first.fabric_gbps
            and o.source is first.source
            and o.citation is first.citation
            and type(price) is float
            and type(spot) is bool
            and type(region) is str
            and type(zone) is str
        ):
            encoded.append(
                f'{head}{_float_repr(price)},"spot":{"true" if spot else "false"},'
                f'"region":{_json_string(region)},"zone":{_json_string(zone)}{tail}'
            )
        else:
            encoded.append(_encode_offer(o))
    return f"[{','.join(encoded)}]"


def offer_from_dict(data: Mapping[str, Any]) -> Offer:
    fields = dict(data)
    fields["intra_node"] = IntraNode(fields["intra_node"]) if fields.get("intra_node") else None
    fields["fabric"] = Fabric(fields.get("fabric", "none"))
    return Offer(**fields)
