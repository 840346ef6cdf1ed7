"""Row-level helpers shared by the CSV adapters (SkyPilot catalog, gpuhunt catalog).

A CSV catalog is read row by row: a row that cannot be read raises
:class:`~recommender.feeds.base.RowError`, which the adapter records in a :class:`RowLog` and
moves on. Nothing here does I/O.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from recommender.errors import CatalogError
from recommender.feeds.base import (
    MAX_REPORTED_ERRORS,
    MAX_USD_PER_GPU_HOUR,
    MIN_USD_PER_GPU_HOUR,
    RowError,
)

__all__ = [
    "RowLog",
    "check_price",
    "decode",
    "optional_float",
    "price_cell",
    "read_csv",
    "whole_count",
]


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
    """The header and an iterator of ``(row number, {column: cell})``, blank lines left out.

    A row whose field count differs from the header's (a truncated download, a stray comma)
    is rejected into ``log`` as the iteration reaches it; a quote left open at the end of the
    data ends the iteration with one rejected row. A column named twice means its last one.
    """
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [name.strip() for name in next(reader, [])]
    except csv.Error:
        header = []

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        number = 0
        try:
            for cells in reader:
                if not "".join(cells).strip():
                    continue  # a blank line
                number += 1
                if len(cells) != len(header):
                    log.rows += 1
                    log.reject(
                        f"row {number}",
                        f"has {len(cells)} fields, the header has {len(header)} (truncated?)",
                    )
                    continue
                yield number, dict(zip(header, cells, strict=True))
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
