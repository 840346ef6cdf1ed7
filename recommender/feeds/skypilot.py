"""SkyPilot catalog adapter: ``catalogs/v8/<cloud>/vms.csv`` → offers.

The format (see SkyPilot's ``sky/catalog``) has one header per cloud with the same column names
in different orders, so every row is read by column name. Facts the adapter relies on:

* ``Price`` and ``SpotPrice`` are USD/h for the whole row; empty or ``0`` means "no price"
  (AWS ``p5e.48xlarge`` has no on-demand price, only spot). A row with neither is rejected.
* AWS lists on-demand per region, repeated on every availability-zone row, and spot per zone:
  each row yields one spot offer for its zone, and the region's on-demand offer once.
* ``GpuInfo`` is a Python literal (single quotes; unquoted in GCP accelerator rows; Azure's
  files, v6 and v8, write the card's name alone, with no memory); per-GPU
  memory is ``MemoryInfo.SizeInMiB``, except RunPod, where that number is GB. Lambda's
  ``TotalGpuMemoryInMiB`` holds the per-GPU value, so totals are never read.
* GCP prices a GPU VM as a host row (``InstanceType`` set, no accelerator) plus an accelerator
  row (no ``InstanceType``) in the same zone with the same GPU count; the fixed-GPU machine
  families are paired exactly as SkyPilot pairs them. Accelerator rows without a host row
  (attachable T4/L4/V100 whose n1/g2 hosts are absent) are rejected: a GPU-only price would
  understate the cost.
* CPU-only and TPU rows are not GPU training offers; they are skipped and not counted.

This module tells the format and the cloud and drives the reading; rows become offers in
:mod:`recommender.feeds.skypilot_builder`, GCP's host + accelerator pairing is in
:mod:`recommender.feeds.skypilot_gcp`, and the inter-node fabric of known instance types in
each cloud's module of the provider registry (:mod:`recommender.providers`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from recommender.errors import CatalogError
from recommender.feeds._rows import RowLog, decode, read_csv
from recommender.feeds.base import MAX_REPORTED_ERRORS, ParsedFeed
from recommender.feeds.skypilot_builder import Builder, Row
from recommender.feeds.skypilot_gcp import add_gcp
from recommender.providers import SKYPILOT, canonical, catalog_names, from_catalog

__all__ = ["CLOUDS", "cloud_from_location", "looks_like_skypilot", "parse_skypilot"]

#: Clouds of SkyPilot's catalog layout whose ``vms.csv`` lists GPU rows: SkyPilot's names for
#: them, from the provider registry (each cloud's ``catalogs[SKYPILOT]``); source:
#: github.com/skypilot-org/skypilot-catalog ``catalogs/v8/`` (and the v5-v7 folders for clouds
#: without a v8 one there: do, fluidstack, paperspace, ibm, scp; azure's v8 file was read from
#: a fork of that repository). They share the column names; the per-cloud quirks are in
#: :mod:`skypilot_builder`.
CLOUDS = catalog_names(SKYPILOT)

#: ``…/catalogs/v8/<cloud>/vms.csv`` (the published layout) or a local ``<cloud>_….csv`` copy.
_LAYOUT = re.compile(r"(?:^|/)catalogs/v\d+/([a-z0-9_-]+)/vms\.csv$")
_LOCAL_COPY = re.compile(r"^([a-z0-9]+)[_.-]")


def cloud_from_location(location: str) -> str | None:
    """The cloud a SkyPilot catalog's URL or path names (``…/catalogs/v8/vast/vms.csv`` →
    ``vast``), or ``None``."""
    path = urlsplit(location).path if "://" in location else location
    path = path.replace("\\", "/").lower()
    match = _LAYOUT.search(path)
    if match is None:
        match = _LOCAL_COPY.match(PurePosixPath(path).name)
    if match is None:
        return None
    return from_catalog(SKYPILOT, match.group(1))


_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")

_HINT = (
    "A SkyPilot catalog is a vms.csv with a header such as "
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice."
)


def looks_like_skypilot(head: str) -> bool:
    """Whether a document's first line is a SkyPilot ``vms.csv`` header."""
    first = head.lstrip("\ufeff \t\r\n").split("\n", 1)[0]
    columns = {c.strip().strip('"') for c in first.split(",")}
    return all(name in columns for name in _REQUIRED)


def parse_skypilot(
    text: str | bytes | Sequence[str | bytes],
    *,
    source: str,
    as_of: datetime | None = None,
    provider: str | None = None,
) -> ParsedFeed:
    """Parse one or more SkyPilot ``vms.csv`` documents of one cloud into offers.

    Args:
        text: a document, or several (GCP host rows and accelerator rows may come as two files).
        source: the source name for errors and ``Offer.source``.
        as_of: when the catalog was collected (the files do not say; pass e.g. the HTTP
            ``Last-Modified`` time).
        provider: the cloud id (``aws``, ``gcp``, ``vast``, ...); without it the cloud is told
            from the header, then from ``source`` as a URL or path (:func:`cloud_from_location`),
            then from the instance names.

    Raises:
        CatalogError: not a SkyPilot catalog, the cloud cannot be told, or no row could be read.
    """
    texts = [text] if isinstance(text, str | bytes) else list(text)
    if not texts:
        raise CatalogError(f"{source}: no SkyPilot catalog given.", source=source, hint=_HINT)
    # Rows are read as the builder consumes them; CSV-level rejections are logged apart and
    # reported first (as when every document was read before any row was built).
    read_log = RowLog()
    tables: list[tuple[str, Iterable[tuple[int, Row]]]] = []
    cloud = (canonical(provider) or provider.lower()) if provider else None
    for index, part in enumerate(texts):
        header, rows = read_csv(decode(part, source), read_log)
        missing = [name for name in _REQUIRED if name not in header]
        if missing:
            raise CatalogError(
                f"{source}: not a SkyPilot catalog: the header lacks {', '.join(missing)}.",
                source=source,
                hint=_HINT,
            )
        where = f"file {index + 1} row" if len(texts) > 1 else "row"
        if cloud is None:
            cloud = _cloud_from_header(header) or cloud_from_location(source)
        if cloud is None:
            table = list(rows)
            cloud = _cloud_from_rows(table)
            rows = iter(table)
        tables.append((where, rows))
    if cloud is None:
        raise CatalogError(
            f"{source}: cannot tell which cloud this SkyPilot catalog is for.",
            source=source,
            hint=f"Name the provider ({', '.join(CLOUDS)}) with the source.",
        )

    build_log = RowLog()
    builder = Builder(cloud, source, build_log)
    if cloud == "gcp":
        add_gcp(builder, tables)
    else:
        for where, table_rows in tables:
            builder.add_table(where, table_rows)
    log = RowLog(
        rows=read_log.rows + build_log.rows,
        rejected=read_log.rejected + build_log.rejected,
        errors=(read_log.errors + build_log.errors)[:MAX_REPORTED_ERRORS],
    )
    offers = builder.offers()
    if not offers:
        shown = "; ".join(log.errors[:3]) or "no GPU rows"
        raise CatalogError(
            f"{source}: none of the {log.rows} SkyPilot catalog rows could be read ({shown}).",
            source=source,
            hint="For GCP, give the host VM rows and the accelerator rows together.",
        )
    return ParsedFeed(
        offers=tuple(offers),
        as_of=as_of,
        rows=log.rows,
        rejected=log.rejected,
        errors=tuple(log.errors),
    )


def _cloud_from_header(header: list[str]) -> str | None:
    if "Arch" in header:
        return "aws"
    if header[:2] == ["InstanceType", "vCPUs"]:
        return "gcp"
    if "AvailabilityZone" in header and header.index("SpotPrice") < header.index("Price"):
        return "runpod"
    return None


def _cloud_from_rows(table: Sequence[tuple[int, Row]]) -> str | None:
    for _, row in table:
        name = row["InstanceType"]
        if re.match(r"^(gpu|cpu)_\d+x_", name):
            return "lambda"
        if re.match(r"^(gpu|cpu)-[a-z0-9-]+_\d+(gpu|vcpu)-", name):
            return "nebius"
    return None
