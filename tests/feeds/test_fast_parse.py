"""The fast readers equal the standard ones: csv_rows ≡ csv.reader, python_literal ≡ literal_eval.

Each is checked on hand-picked edge cases (the places a fast path could part from the standard
reader) and on generated input built from the characters that matter to each grammar.
"""

from __future__ import annotations

import ast
import csv
import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.feeds.fast_parse import csv_rows, python_literal


def reference_rows(text: str) -> list[list[str]] | str:
    try:
        return list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        return f"csv.Error: {exc}"


def fast_rows(text: str) -> list[list[str]] | str:
    try:
        return list(csv_rows(text))
    except csv.Error as exc:
        return f"csv.Error: {exc}"


CSV_CASES = [
    "",
    "\n",
    "\n\n",
    "a,b\n1,2\n",
    "a,b\n1,2",
    'a,"b,c",d\n',
    '"q",x\n',
    ',"q"\n',
    '"q",\n',
    '""\n',
    '"",""\n',
    'a, "b"\n',  # a quote after a space is literal text
    '"a"b,c\n',  # text glued after the closing quote
    'ab"c,d\n',  # a quote inside an unquoted field
    '"a ""quoted"" word",x\n',
    'a,"multi\nline",b\nc,d\n',
    'a,"open at the end',
    'a,"open at the end\n',
    "a,b\r\nc,d\r\n",
    "a,b\rc,d",
    "a,\0,b\n",
    "x,y\n\nz,w\n",
    "x" * (csv.field_size_limit() + 1) + "\n",
    '"' + "x" * (csv.field_size_limit() + 1) + '"\n',
    "h\n" + 'a,"b\n' * 3,
    # A SkyPilot row: the GpuInfo cell is the one quoted field.
    "InstanceType,AcceleratorName,GpuInfo,Price\n"
    "g5.xlarge,A10G,\"{'Gpus': [{'Name': 'A10G', 'MemoryInfo': {'SizeInMiB': 24576}}]}\",1.0\n",
]


@pytest.mark.parametrize("text", CSV_CASES)
def test_csv_rows_equal_csv_reader_on_edge_cases(text: str) -> None:
    assert fast_rows(text) == reference_rows(text)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet='ab,"\n\r \0x', max_size=40))
def test_csv_rows_equal_csv_reader_on_generated_text(text: str) -> None:
    assert fast_rows(text) == reference_rows(text)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(st.text(alphabet="ab ,\"\n{}:'", max_size=8), min_size=1, max_size=5),
        max_size=6,
    )
)
def test_csv_rows_read_back_what_csv_writer_wrote(rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    assert fast_rows(out.getvalue()) == reference_rows(out.getvalue())


def reference_literal(text: str) -> tuple[str, Any]:
    try:
        return "value", ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as exc:
        return "error", type(exc).__name__


def fast_literal(text: str) -> tuple[str, Any]:
    try:
        return "value", python_literal(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError) as exc:
        return "error", type(exc).__name__


LITERAL_CASES = [
    "{'Gpus': [{'Name': 'H100', 'Count': 8, 'MemoryInfo': {'SizeInMiB': 81920}}]}",
    "{'Gpus': [{'MemoryInfo': {'SizeInMiB': 40960}}]}",
    "{'a': None}",
    "{'a': True, 'b': False}",
    "{'a': true}",
    "{'a': null}",
    "{'a': NaN}",
    "{'a': Infinity}",
    "{'a': -Infinity}",
    "{1: 2}",
    "{'a': (1, 2)}",
    "{'a': {1, 2}}",
    "{'a': [1,]}",
    "{'a': 00}",
    "{'a': 1e400}",
    "{'a': -0.0}",
    "{'a': - 1}",
    "{'a': 'b' 'c'}",
    "{'a': b'x'}",
    "{'a': \"it's\"}",
    "{'a': 'x\", \"b\": \"y'}",
    "{'a': 'tab\there'}",
    "{'a': 1j}",
    "{'a': ...}",
    "{'a': 1_000}",
    "'just a string'",
    "",
    "{'a': 'x'",
    "[" * 5000 + "]" * 5000,
]


@pytest.mark.parametrize("text", LITERAL_CASES)
def test_python_literal_equals_literal_eval_on_edge_cases(text: str) -> None:
    assert fast_literal(text) == reference_literal(text)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="{}[]()'\",:. -+e0159aNTFnul_\\\t", max_size=30))
def test_python_literal_equals_literal_eval_on_generated_text(text: str) -> None:
    assert fast_literal(text) == reference_literal(text)


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=500, deadline=None)
@given(_values)
def test_python_literal_reads_back_repr(value: object) -> None:
    text = repr(value)
    assert fast_literal(text) == reference_literal(text)
