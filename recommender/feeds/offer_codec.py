"""A snapshot as Redis stores it (``recommender.feeds.cache``): its metadata hash and its offers.

:class:`SnapshotMeta` is stored as a hash of strings (:func:`meta_fields`,
:func:`meta_from_fields`); the offers as JSON, in one of two formats.

Format 2 (written since this version; :func:`snapshot_json`, :func:`snapshot_offers`) is one
object: each instance shape's twelve shared fields once, then the offers in the snapshot's
order as five columns: the shape's index and the four fields that vary between offers of a
shape::

    {"format": 2,
     "shapes": [[provider, instance_type, gpu_id, gpu_count, gpu_memory_gib, vcpus, ram_gib,
                 intra_node, fabric, fabric_gbps, source, citation], ...],
     "offers": {"shape": [0, 0, 1, ...], "price_usd_per_hour": [...], "spot": [...],
                "region": [...], "zone": [...]}}

Every offer is read back by ``Offer``'s constructor, so a corrupted value fails its checks.

Format 1 (written by older versions, still read): a JSON array of objects with ``Offer``'s
fields in declaration order, enums as their values (:func:`offer_to_dict`); read back one
offer at a time by :func:`offer_from_dict`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from recommender.gpus import IntraNode
from recommender.pricing.offers import Fabric, Offer

__all__ = [
    "SNAPSHOT_FORMAT",
    "SnapshotMeta",
    "meta_fields",
    "meta_from_fields",
    "offer_from_dict",
    "offer_to_dict",
    "snapshot_json",
    "snapshot_offers",
]


@dataclass(frozen=True, slots=True)
class SnapshotMeta:
    """What Redis knows about one source's last good snapshot and latest attempt."""

    name: str
    fetched_at: datetime | None
    as_of: datetime | None
    rows: int
    rejected: int
    offers: int
    sha256: str
    error: str | None = None
    error_at: datetime | None = None
    etag: str | None = None
    last_modified: str | None = None
    locations: tuple[str, ...] = ()
    bundled: bool = False
    #: Rejection reasons of the snapshot's parse (first few).
    errors: tuple[str, ...] = ()

    @property
    def has_snapshot(self) -> bool:
        return self.offers > 0


def _time(value: datetime | None) -> str:
    return value.isoformat() if value else ""


def _parse_time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def meta_fields(meta: SnapshotMeta) -> dict[Any, Any]:
    return {
        "name": meta.name,
        "fetched_at": _time(meta.fetched_at),
        "as_of": _time(meta.as_of),
        "rows": str(meta.rows),
        "rejected": str(meta.rejected),
        "offers": str(meta.offers),
        "sha256": meta.sha256,
        "etag": meta.etag or "",
        "last_modified": meta.last_modified or "",
        "locations": json.dumps(list(meta.locations)),
        "bundled": "1" if meta.bundled else "0",
        "errors": json.dumps(list(meta.errors)),
    }


def meta_from_fields(name: str, fields: Mapping[Any, Any]) -> SnapshotMeta:
    return SnapshotMeta(
        name=name,
        fetched_at=_parse_time(fields.get("fetched_at")),
        as_of=_parse_time(fields.get("as_of")),
        rows=int(fields.get("rows") or 0),
        rejected=int(fields.get("rejected") or 0),
        offers=int(fields.get("offers") or 0),
        sha256=fields.get("sha256", ""),
        error=fields.get("error") or None,
        error_at=_parse_time(fields.get("error_at")),
        etag=fields.get("etag") or None,
        last_modified=fields.get("last_modified") or None,
        locations=tuple(json.loads(fields.get("locations") or "[]")),
        bundled=fields.get("bundled") == "1",
        errors=tuple(json.loads(fields.get("errors") or "[]")),
    )


def offer_to_dict(offer: Offer) -> dict[str, Any]:
    """The offer's fields in declaration order, enums as their values: one offer of a
    format-1 snapshot, as older versions wrote it (the tests write format-1 stores with it)."""
    fields = asdict(offer)
    fields["intra_node"] = offer.intra_node.value if offer.intra_node else None
    fields["fabric"] = offer.fabric.value
    return fields


#: The ``format`` of a snapshot written by :func:`snapshot_json`; why: the reader checks it,
#: so a value of another layout fails loudly instead of decoding into wrong offers.
SNAPSHOT_FORMAT = 2


def snapshot_json(offers: Iterable[Offer]) -> str:
    """The offers as a format-2 snapshot: each instance shape once, then every offer's shape
    index, price, spot, region and zone, in the given order.

    A shape is the twelve fields other than those four. Equal values of different types
    (8 and 8.0, 1 and True) are written differently by JSON, so the numbers' types are part
    of a shape: every offer reads back with the values and types it was stored with. (Only
    0.0 and -0.0 in one shape's field read back as whichever came first: equal floats.)
    """
    items = offers if isinstance(offers, Sequence) else list(offers)
    shape_index: dict[tuple[Any, ...], int] = {}
    shapes: list[list[Any]] = []
    indexes: list[int] = []
    for o in items:
        count, memory, vcpus, ram, gbps = (
            o.gpu_count,
            o.gpu_memory_gib,
            o.vcpus,
            o.ram_gib,
            o.fabric_gbps,
        )
        key = (
            o.provider,
            o.instance_type,
            o.gpu_id,
            count,
            memory,
            vcpus,
            ram,
            o.intra_node,
            o.fabric,
            gbps,
            o.source,
            o.citation,
            type(count),
            type(memory),
            type(vcpus),
            type(ram),
            type(gbps),
        )
        index = shape_index.get(key)
        if index is None:
            index = shape_index[key] = len(shapes)
            # The key's twelve fields, enums as their values.
            intra_node = o.intra_node.value if o.intra_node else None
            shapes.append([*key[:7], intra_node, o.fabric.value, *key[9:12]])
        indexes.append(index)
    columns = {
        "shape": indexes,
        "price_usd_per_hour": [o.price_usd_per_hour for o in items],
        "spot": [o.spot for o in items],
        "region": [o.region for o in items],
        "zone": [o.zone for o in items],
    }
    document = {"format": SNAPSHOT_FORMAT, "shapes": shapes, "offers": columns}
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def snapshot_offers(text: str | bytes) -> tuple[Offer, ...]:
    """The offers of a format-2 snapshot, equal to those :func:`snapshot_json` was given.

    Every offer is built by ``Offer``'s constructor, which checks it: a corrupted value
    fails as in format 1, per offer.

    Raises:
        ValueError: not JSON, not format 2, columns of unequal lengths, an offer naming no
            shape, an impossible value.
        TypeError: a value of the wrong type where ``Offer`` compares or unpacks it.
    """
    data = json.loads(text)
    if type(data) is not dict or data.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(f"not a format-{SNAPSHOT_FORMAT} price snapshot")
    try:
        shapes: list[Any] = data["shapes"]
        columns: dict[str, Any] = data["offers"]
        rows = zip(
            columns["shape"],
            columns["price_usd_per_hour"],
            columns["spot"],
            columns["region"],
            columns["zone"],
            strict=True,
        )
        offers: list[Offer] = []
        for index, price, spot, region, zone in rows:
            if index < 0:  # a negative index would read another shape from the end
                raise IndexError(f"shape {index}")
            offers.append(_offer(shapes[index], price, spot, region, zone))
    except (KeyError, IndexError) as exc:
        raise ValueError(f"corrupted price snapshot: no {exc}") from exc
    return tuple(offers)


def _offer(shape: Any, price: Any, spot: Any, region: Any, zone: Any) -> Offer:
    """An offer of a shape, by the constructor (which checks the fields)."""
    (
        provider,
        instance_type,
        gpu_id,
        gpu_count,
        gpu_memory_gib,
        vcpus,
        ram_gib,
        intra_node,
        fabric,
        fabric_gbps,
        source,
        citation,
    ) = shape
    return Offer(
        provider,
        instance_type,
        gpu_id,
        gpu_count,
        price,
        spot,
        region,
        zone,
        gpu_memory_gib,
        vcpus,
        ram_gib,
        IntraNode(intra_node) if intra_node else None,
        Fabric(fabric),
        fabric_gbps,
        source,
        citation,
    )


def offer_from_dict(data: Mapping[str, Any]) -> Offer:
    fields = dict(data)
    fields["intra_node"] = IntraNode(fields["intra_node"]) if fields.get("intra_node") else None
    fields["fabric"] = Fabric(fields.get("fabric", "none"))
    return Offer(**fields)
