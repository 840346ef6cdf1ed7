"""Row-level helpers shared by the CSV adapters (SkyPilot catalog, gpuhunt catalog).

A CSV catalog is read row by row: a row that cannot be read raises :class:`RowError`, which
the adapter records in a :class:`RowLog` and moves on. Nothing here does I/O.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from recommender.errors import CatalogError
from recommender.feeds.base import MAX_REPORTED_ERRORS
from recommender.feeds.fast_parse import csv_rows
from recommender.feeds.native import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR
from recommender.gpus import GpuSpec, get_gpu, try_normalize

__all__ = [
    "RowError",
    "RowLog",
    "check_price",
    "decode",
    "optional_float",
    "price_cell",
    "read_csv",
    "read_csv_cells",
    "resolve_gpu",
    "whole_count",
]

#: Relative slack when comparing a catalog's GPU memory with the spec table; why: catalogs
#: round and mix the vendor's GB label with GiB (80 GB = 74.5 GiB, a 7 % gap).
_MEMORY_TOLERANCE = 0.10


class RowError(ValueError):
    """One row could not be read; the message says why (without the row number)."""


@dataclass(slots=True)
class RowLog:
    """Counts rows and keeps the first few rejection reasons."""

    rows: int = 0
    rejected: int = 0
    errors: list[str] = field(default_factory=list)

    def reject(self, where: str, reason: str) -> None:
        self.rejected += 1
        if len(self.errors) < MAX_REPORTED_ERRORS:
            self.errors.append(f"{where}: {reason}")


def decode(text: str | bytes, source: str) -> str:
    """Text from bytes (UTF-8, optional byte-order mark), without a byte-order mark."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CatalogError(
                f"{source}: not a price catalog: the bytes are not UTF-8 text "
                f"(bad byte at offset {exc.start}).",
                source=source,
            ) from None
    return text.removeprefix("\ufeff")


def read_csv(text: str, log: RowLog) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """The header and an iterator of ``(row number, {column: cell})``.

    A row whose field count differs from the header's (a truncated download, a stray comma)
    is rejected into ``log``; a quote left open at the end of the data ends the iteration
    with one rejected row.
    """
    header, rows = read_csv_cells(text, log)
    return header, ((number, dict(zip(header, cells, strict=True))) for number, cells in rows)


def read_csv_cells(text: str, log: RowLog) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    """Like :func:`read_csv`, with each row as its list of cells in header order.

    For adapters that read cells by column index (``header.index``): no dict per row.
    """
    reader = csv_rows(text)
    try:
        header = [name.strip() for name in next(reader, [])]
    except csv.Error:
        header = []
    width = len(header)

    def rows() -> Iterator[tuple[int, list[str]]]:
        number = 0
        try:
            for cells in reader:
                # A row whose first cell has text is not blank: no scan of the other cells.
                if not (cells and cells[0].strip()):
                    for cell in cells:
                        if cell.strip():
                            break
                    else:
                        continue  # blank line (or no cells at all)
                number += 1
                if len(cells) != width:
                    log.rows += 1
                    log.reject(
                        f"row {number}",
                        f"has {len(cells)} fields, the header has {width} (truncated?)",
                    )
                    continue
                yield number, cells
        except csv.Error as exc:
            number += 1
            log.rows += 1
            log.reject(f"row {number}", f"unreadable CSV ({exc}); truncated download?")

    return header, rows()


def optional_float(cell: str | None, column: str) -> float | None:
    """A float cell; empty means ``None``."""
    if not cell:
        return None
    try:
        value = float(cell)
    except ValueError:
        if not cell.strip():
            return None
        raise RowError(f"{column} {cell!r} is not a number") from None
    if not math.isfinite(value):
        raise RowError(f"{column} {cell!r} is not a finite number")
    return value


def price_cell(cell: str | None, column: str) -> float | None:
    """A price cell in USD/h; empty or zero means "no price" (``None``)."""
    value = optional_float(cell, column)
    if value is None or value == 0:
        return None
    if value < 0:
        raise RowError(f"{column} {cell!r} is negative")
    return value


def check_price(price_usd_per_hour: float, gpu_count: int, column: str) -> None:
    """Reject prices that are not believable per GPU-hour (unit errors, sentinels)."""
    per_gpu = price_usd_per_hour / gpu_count
    if not MIN_USD_PER_GPU_HOUR <= per_gpu <= MAX_USD_PER_GPU_HOUR:
        raise RowError(
            f"{column} {price_usd_per_hour:g} is ${per_gpu:g} per GPU-hour, outside the "
            f"believable ${MIN_USD_PER_GPU_HOUR:g}-${MAX_USD_PER_GPU_HOUR:g}"
        )


def whole_count(cell: str | None, column: str) -> int:
    """A GPU count written as ``8`` or ``8.0``; fractional GPUs are not training offers."""
    value = optional_float(cell, column)
    if value is None:
        raise RowError(f"{column} is empty")
    if not value.is_integer() or value < 1:
        raise RowError(f"{column} {cell!r} is not a whole number of GPUs")
    return int(value)


def _memory_matches(spec: GpuSpec, memory_gib: float) -> bool:
    # Accept the GiB value, or the vendor's GB label written as GiB.
    return any(
        abs(memory_gib - reference) <= _MEMORY_TOLERANCE * reference
        for reference in (spec.memory_gib, spec.memory_gb)
    )


def resolve_gpu(name: str, *, memory_gib: float | None = None, pcie: bool = False) -> str:
    """The canonical GPU id for a catalog's GPU name.

    ``memory_gib`` (per GPU) picks the memory variant ("A100" with 80 GiB → A100 80GB) and
    ``pcie`` the PCIe form factor when the catalog says so only in an instance or card name.
    """
    gpu_id, error = _resolve_gpu(name, memory_gib, pcie)
    if gpu_id is None:
        raise RowError(error)
    return gpu_id


#: Distinct (name, memory, PCIe) triples remembered; why: a catalog names a few dozen GPU
#: variants, repeated on every region and zone row, and the spec table never changes.
_RESOLVE_CACHE_SIZE = 4096


@lru_cache(maxsize=_RESOLVE_CACHE_SIZE)
def _resolve_gpu(name: str, memory_gib: float | None, pcie: bool) -> tuple[str | None, str]:
    """``(gpu id, "")``, or ``(None, why not)``: pure, so remembered per distinct input."""
    stem = re.sub(r"[-_ ]?\d+\s*gb$", "", name.strip(), flags=re.IGNORECASE)
    labels: list[str] = []
    base = try_normalize(name)
    if base is not None:
        labels.append(f"{get_gpu(base).memory_gb:g}")
    if memory_gib is not None:
        labels += [f"{round(memory_gib)}", f"{round(memory_gib * 2**30 / 1e9)}"]
    candidates: list[str] = []
    if pcie:
        candidates += [f"{stem} PCIe {label}GB" for label in labels] + [f"{stem} PCIe"]
    candidates.append(name)
    candidates += [f"{stem} {label}GB" for label in labels]
    for candidate in dict.fromkeys(candidates):
        gpu_id = try_normalize(candidate)
        if gpu_id is None:
            continue
        if memory_gib is None or _memory_matches(get_gpu(gpu_id), memory_gib):
            return gpu_id, ""
    if base is None:
        return None, f"unknown GPU {name!r}"
    return None, f"GPU {name!r} with {memory_gib:g} GiB matches no known variant"
