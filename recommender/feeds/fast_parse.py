"""Faster equivalents of two standard-library readers, for the catalogs' common case.

* :func:`csv_rows` yields what ``csv.reader`` (default dialect) yields for a text, reading
  lines with at most one plainly quoted field by ``str.split`` (about 40 % less time than
  ``csv.reader`` on SkyPilot files, whose ``GpuInfo`` cell is such a field); the first line
  it cannot read that way, and everything after it, goes to ``csv.reader`` itself.
* :func:`python_literal` is ``ast.literal_eval`` for the literals catalogs write (SkyPilot's
  ``GpuInfo`` dicts), read as JSON when the text can mean nothing else (~10x faster).

Both return exactly what the standard function returns, or raise what it raises; the tests
compare them on generated input (``tests/feeds/test_fast_parse.py``).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["csv_rows", "python_literal"]


def csv_rows(text: str) -> Iterator[list[str]]:
    """The rows ``csv.reader(io.StringIO(text, newline=""))`` yields, as lists of cells.

    Raises:
        csv.Error: where ``csv.reader`` raises it (from the line it would raise on).
    """
    if "\r" in text or "\0" in text:
        # Carriage returns end rows anywhere for csv (and stay inside quoted fields), and NUL
        # handling differs between Python versions: the csv module reads such a text.
        yield from csv.reader(io.StringIO(text, newline=""))
        return
    lines = text.split("\n")
    ended = lines[-1] == ""
    if ended:
        lines.pop()  # the newline ending the last row starts no row
    limit = csv.field_size_limit()
    for index, line in enumerate(lines):
        if '"' not in line:
            if not line:
                yield []  # csv.reader's row for an empty line
                continue
            if len(line) <= limit:
                yield line.split(",")
                continue
        elif len(line) <= limit:
            # One quoted field, opening where a field starts and closing where one ends: no
            # doubled quote, no newline inside, no text glued to it; anything else goes to csv.
            parts = line.split('"')
            if len(parts) == 3:
                before, quoted, after = parts
                if (not before or before[-1] == ",") and (not after or after[0] == ","):
                    # ``before`` ends with the comma opening the field, so its split ends with
                    # an empty cell, and ``after``'s starts with one: the quoted text replaces
                    # both (no slices, no append).
                    cells = before.split(",")
                    tail = after.split(",")
                    tail[0] = quoted
                    cells[-1:] = tail
                    yield cells
                    continue
        rest = "\n".join(lines[index:]) + ("\n" if ended else "")
        yield from csv.reader(io.StringIO(rest, newline=""))
        return


#: JSON words that are names (or errors) to Python, and Python constants JSON does not know;
#: why: a text holding one is left to ``ast.literal_eval``, so no text reads differently.
_NOT_SHARED = re.compile(r"true|false|null|NaN|Infinity|True|False|None")


def python_literal(text: str) -> Any:
    """``ast.literal_eval(text)``, reading the text as JSON when that cannot differ.

    A text without double quotes, backslashes and constant names reads the same as JSON
    with its single quotes made double, or fails to read as JSON (tuples, sets, non-string
    keys, trailing commas, string prefixes…); only then is ``ast.literal_eval`` called.

    Raises:
        ValueError, SyntaxError, MemoryError, RecursionError: as ``ast.literal_eval``.
    """
    if '"' not in text and "\\" not in text and _NOT_SHARED.search(text) is None:
        try:
            return json.loads(text.replace("'", '"'))
        except (ValueError, RecursionError):
            pass
    return ast.literal_eval(text)
