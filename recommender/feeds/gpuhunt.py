"""gpuhunt catalog adapter: dstack's ``<provider>.csv`` → offers.

Columns (gpuhunt catalog v3): ``instance_name,location,price,cpu,memory,gpu_count,gpu_name,
gpu_memory,spot,disk_size,gpu_vendor,flags,cpu_arch,provider_data``. ``price`` is USD/h for the
whole offer, ``memory``/``gpu_memory`` are GB with ``gpu_memory`` per GPU, and spot and
on-demand are separate rows. The file is per provider and does not name it, so the provider
comes from the file name (``aws.csv``) or from the caller.

CPU-only rows (``gpu_count`` 0) and TPU rows (vendor ``google`` or a ``tpu-`` name) are not GPU
training offers: they are skipped and not counted. So are rows gpuhunt flags (``flags``, space
separated, e.g. ``gcp-dws-calendar-mode``, ``runpod-cluster``, ``oci-spot``): gpuhunt hides a
flagged offer from every client that does not list the flag in ``allowed_flags``
(``Catalog.query``: "only offers with all flags allowed will be returned"), because it is sold
another way (a reservation, a cluster product) or needs newer client support; gpufit allows
none. The published archive (a zip of these files) is read by :mod:`gpuhunt_zip`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from recommender.errors import CatalogError
from recommender.feeds._rows import (
    RowLog,
    check_price,
    decode,
    optional_float,
    price_cell,
    read_csv,
    whole_count,
)
from recommender.feeds.base import ParsedFeed, RowError, resolve_gpu
from recommender.pricing.offers import Offer
from recommender.providers import GPUHUNT, canonical, catalog_names, fabric_for, from_catalog

__all__ = [
    "GPUHUNT_COLUMNS",
    "GPUHUNT_PROVIDERS",
    "looks_like_gpuhunt",
    "parse_gpuhunt",
    "provider_from_location",
]

#: The catalog header, in file order; source: gpuhunt ``src/gpuhunt/_internal/catalog.py``.
GPUHUNT_COLUMNS = (
    "instance_name",
    "location",
    "price",
    "cpu",
    "memory",
    "gpu_count",
    "gpu_name",
    "gpu_memory",
    "spot",
    "disk_size",
    "gpu_vendor",
    "flags",
    "cpu_arch",
    "provider_data",
)
_REQUIRED = ("instance_name", "location", "price", "gpu_count", "gpu_name", "spot")

#: Provider names gpuhunt publishes catalogs under (the registry's ``catalogs[GPUHUNT]``);
#: source: gpuhunt README (offline and online providers) and ``src/gpuhunt/providers/``. A
#: file named otherwise needs an explicit provider.
GPUHUNT_PROVIDERS = frozenset(catalog_names(GPUHUNT))

#: A GCP zone name (``us-central1-a``); gpuhunt puts zones in ``location`` for GCP.
_GCP_ZONE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")

#: GB → GiB: gpuhunt's sizes are the vendor's GB labels (80 for an H100).
_GIB_PER_GB = 1e9 / 2**30

_HINT = "A gpuhunt catalog is a CSV with the header " + ",".join(GPUHUNT_COLUMNS) + "."


def looks_like_gpuhunt(head: str) -> bool:
    """Whether a document's first line is a gpuhunt catalog header."""
    first = head.lstrip("\ufeff \t\r\n").split("\n", 1)[0]
    columns = {c.strip().strip('"') for c in first.split(",")}
    return all(name in columns for name in _REQUIRED)


def provider_from_location(location: str) -> str | None:
    """The provider id in a catalog file name or URL (``…/aws.csv`` → ``aws``)."""
    path = urlsplit(location).path if "://" in location else location
    stem = PurePosixPath(path.replace("\\", "/")).name.split(".", 1)[0].lower()
    return from_catalog(GPUHUNT, stem)


def parse_gpuhunt(
    text: str | bytes,
    *,
    source: str,
    as_of: datetime | None = None,
    provider: str | None = None,
) -> ParsedFeed:
    """Parse a gpuhunt catalog CSV into offers.

    Args:
        text: the CSV document.
        source: the source name (a path or URL); the provider is read from its file name
            unless ``provider`` is given.
        as_of: when the catalog was collected (the file does not say).
        provider: the provider id, when the file name does not carry it.

    Raises:
        CatalogError: not a gpuhunt catalog, no provider, or no row could be read.
    """
    provider = (provider or provider_from_location(source) or "").lower()
    provider = canonical(provider) or provider
    if not provider:
        raise CatalogError(
            f"{source}: cannot tell which provider this gpuhunt catalog is for.",
            source=source,
            hint="Name the file after the provider (aws.csv) or pass the provider.",
        )
    log = RowLog()
    header, rows = read_csv(decode(text, source), log)
    missing = [name for name in _REQUIRED if name not in header]
    if missing:
        raise CatalogError(
            f"{source}: not a gpuhunt catalog: the header lacks {', '.join(missing)}.",
            source=source,
            hint=_HINT,
        )
    offers: dict[str, Offer] = {}
    for number, row in rows:
        if _skipped(row):
            continue
        log.rows += 1
        try:
            offer = _offer(row, provider, source)
            if offer.key in offers:
                raise RowError("duplicate of an earlier row (same instance, GPUs, place and spot)")
        except RowError as exc:
            log.reject(f"row {number}", str(exc))
            continue
        offers[offer.key] = offer
    if not offers:
        shown = "; ".join(log.errors[:3]) or "no GPU rows"
        raise CatalogError(
            f"{source}: none of the {log.rows} gpuhunt catalog rows could be read ({shown}).",
            source=source,
            hint=_HINT,
        )
    return ParsedFeed(
        offers=tuple(offers.values()),
        as_of=as_of,
        rows=log.rows,
        rejected=log.rejected,
        errors=tuple(log.errors),
    )


def _skipped(row: Mapping[str, str]) -> bool:
    vendor = row.get("gpu_vendor", "").strip().lower()
    name = row.get("gpu_name", "").strip().lower()
    count = row.get("gpu_count", "").strip()
    flagged = bool((row.get("flags") or "").strip())
    return vendor == "google" or name.startswith("tpu") or count in ("", "0", "0.0") or flagged


def _offer(row: Mapping[str, str], provider: str, source: str) -> Offer:
    instance_type = row["instance_name"].strip()
    if not instance_type:
        raise RowError("instance_name is empty")
    location = row["location"].strip()
    if not location:
        raise RowError("location is empty")
    region, zone = location, ""
    zone_match = _GCP_ZONE.match(location) if provider == "gcp" else None
    if zone_match:
        region, zone = zone_match.group(1), location
    count = whole_count(row["gpu_count"], "gpu_count")
    memory_gb = optional_float(row.get("gpu_memory"), "gpu_memory")
    memory_gib = memory_gb * _GIB_PER_GB if memory_gb and memory_gb > 0 else None
    gpu_name = row["gpu_name"].strip()
    if not gpu_name:
        raise RowError("gpu_name is empty")
    gpu_id = resolve_gpu(gpu_name, memory_gib=memory_gib)
    price = price_cell(row["price"], "price")
    if price is None:
        raise RowError("price is empty or zero")
    check_price(price, count, "price")
    spot_cell = row["spot"].strip().lower()
    if spot_cell not in ("true", "false"):
        raise RowError(f"spot {row['spot']!r} is not True or False")
    ram_gb = optional_float(row.get("memory"), "memory")
    fabric, fabric_gbps = fabric_for(provider, instance_type, count)
    vcpus = optional_float(row.get("cpu"), "cpu")
    return Offer(
        provider=provider,
        instance_type=instance_type,
        gpu_id=gpu_id,
        gpu_count=count,
        price_usd_per_hour=price,
        spot=spot_cell == "true",
        region=region,
        zone=zone,
        gpu_memory_gib=memory_gib,
        vcpus=vcpus if vcpus and vcpus > 0 else None,
        ram_gib=ram_gb * _GIB_PER_GB if ram_gb and ram_gb > 0 else None,
        fabric=fabric,
        fabric_gbps=fabric_gbps,
        source=source,
        citation=f"gpuhunt catalog {provider}.csv",
    )
