"""``compact_json`` writes what the standard library's compact encoder writes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.jsontext import compact_json


def _stdlib(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_scalars = st.one_of(
    st.text(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.booleans(),
    st.none(),
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=40,
)


class TestCompactJson:
    @settings(max_examples=500, deadline=None)
    @given(_documents)
    def test_the_standard_librarys_text(self, value: Any) -> None:
        assert compact_json(value) == _stdlib(value)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.floats(allow_nan=False)))
    def test_floats_keep_their_value(self, value: list[float]) -> None:
        back = json.loads(compact_json(value))
        assert back == value
        assert [math.copysign(1, x) for x in back] == [math.copysign(1, x) for x in value]

    def test_tuples_are_arrays(self) -> None:
        assert compact_json(({"a": (1, "é")},)) == '[{"a":[1,"é"]}]'

    def test_a_lone_surrogate_is_written_as_the_standard_library_does(self) -> None:
        """pydantic-core refuses it (it writes UTF-8); the standard library takes over."""
        value = {"region": "us-\ud800", "n": [1]}
        assert compact_json(value) == _stdlib(value)

    def test_deep_nesting_is_written_as_the_standard_library_does(self) -> None:
        value: list[Any] = []
        for _ in range(300):
            value = [value]
        assert compact_json(value) == _stdlib(value)

    def test_a_list_that_contains_itself_is_refused(self) -> None:
        value: list[Any] = []
        value.append(value)
        with pytest.raises(ValueError, match="Circular"):
            compact_json(value)

    def test_what_neither_can_write_is_refused(self) -> None:
        with pytest.raises(TypeError):
            compact_json({"x": object()})
