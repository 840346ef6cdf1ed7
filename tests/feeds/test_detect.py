"""Format detection by content, and the one entry point that parses any supported source."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.errors import CatalogError
from recommender.feeds.base import ParsedFeed
from recommender.feeds.detect import FeedFormat, detect_format, parse_any
from tests.feeds.conftest import fixture_bytes


class TestDetection:
    @pytest.mark.parametrize(
        ("name", "kind"),
        [
            ("feed.json", FeedFormat.NATIVE),
            ("skypilot_aws.csv", FeedFormat.SKYPILOT),
            ("skypilot_lambda.csv", FeedFormat.SKYPILOT),
            ("skypilot_gcp_accelerators.csv", FeedFormat.SKYPILOT),
            ("aws.csv", FeedFormat.GPUHUNT),
        ],
    )
    def test_formats_are_told_apart_by_content(self, name: str, kind: FeedFormat) -> None:
        """The adapter is chosen from the document, whatever it is called."""
        assert detect_format(fixture_bytes(name), source="anything") is kind

    def test_a_byte_order_mark_is_ignored(self) -> None:
        """Files saved by spreadsheet tools start with a BOM; detection and parsing allow it."""
        text = b"\xef\xbb\xbf" + fixture_bytes("skypilot_nebius.csv")
        assert len(parse_any(text, source="nebius").offers) == 3

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            (b"", "empty"),
            (b"   \n\r\n", "empty"),
            (b"<html><body>Not Found</body></html>", "not a price feed"),
            (b"\x89PNG\r\n\x1a\n\x00\x00\x00", "not a price feed"),
            (b'{"hello": "world"}', "not a price feed"),
        ],
    )
    def test_unknown_input_is_a_catalog_error(self, body: bytes, message: str) -> None:
        """Empty files, HTML error pages, binaries and foreign JSON are refused clearly."""
        with pytest.raises(CatalogError, match=message) as info:
            parse_any(body, source="src")
        assert info.value.source == "src"
        assert info.value.hint

    def test_a_truncated_native_feed_is_a_catalog_error(self) -> None:
        """A gpufit feed cut mid-document is invalid JSON, reported as such."""
        text = fixture_bytes("feed.json")
        with pytest.raises(CatalogError, match="invalid JSON"):
            parse_any(text[: len(text) // 2], source="src")

    def test_mixed_formats_in_one_source_are_refused(self) -> None:
        """Only a SkyPilot GCP catalog may be given as several documents."""
        with pytest.raises(CatalogError, match="mixes formats"):
            parse_any([fixture_bytes("aws.csv"), fixture_bytes("skypilot_aws.csv")], source="s")


class TestParseAny:
    @pytest.mark.parametrize(
        ("names", "offers"),
        [
            (("feed.json",), 2),
            (
                ("skypilot_gcp_hosts.csv", "skypilot_gcp_accelerators.csv"),
                6,
            ),  # a3-edgegpu pairs with H100 too
            (("aws.csv",), 4),
        ],
    )
    def test_each_format_parses(self, names: tuple[str, ...], offers: int) -> None:
        """parse_any dispatches to the right adapter and returns its offers."""
        parts = [fixture_bytes(n) for n in names]
        feed = parse_any(parts if len(parts) > 1 else parts[0], source=names[0])
        assert isinstance(feed, ParsedFeed)
        assert len(feed.offers) == offers

    @settings(max_examples=150, deadline=None)
    @given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
    def test_arbitrary_bytes_never_crash(self, body: bytes) -> None:
        """Whatever arrives, the result is a ParsedFeed or a CatalogError, never a traceback."""
        with contextlib.suppress(CatalogError):
            parse_any(body, source="fuzz")

    @settings(max_examples=100, deadline=None)
    @given(st.integers(min_value=0, max_value=2200))
    def test_any_truncation_of_a_catalog_never_crashes(self, cut: int) -> None:
        """A download cut at any byte parses what it can or fails as a CatalogError."""
        text = fixture_bytes("skypilot_aws.csv")[:cut]
        try:
            feed = parse_any(text, source="cut")
        except CatalogError:
            return
        assert feed.rows >= len({o.instance_type for o in feed.offers})
