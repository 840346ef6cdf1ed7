"""The short answer's pieces (bot/render/summary.py): the line that answers, a table that fits
80 columns, each caveat once and the spot model's sources once (issue #39)."""

from __future__ import annotations

from dataclasses import replace

from bot.render.summary import WIDTH, caveat_lines, headline, option_table, spot_sources
from recommender import HardwareRequest, Recommendation, recommend
from tests.factories import NOW, catalog, offer, workload


def _rec(**overrides: object) -> Recommendation:
    offers = catalog(
        offer(),
        offer(spot=True, price_usd_per_hour=22.0, region="us-west-2", zone="usw2-az1"),
        offer(
            provider="a-provider-with-a-long-name",
            instance_type="an-instance-type-name-longer-than-any-column",
            region="a-region-name-that-is-long",
            price_usd_per_hour=50.0,
        ),
    )
    return recommend(workload(**overrides), offers, now=NOW, top=5)


def test_the_line_names_the_option_its_cost_hours_and_deadline_fit() -> None:
    rec = _rec(tokens=2e9, duration_hours=72, budget_usd=50_000)
    line = headline(rec)
    best = rec.options[0]
    assert line.startswith("Best: 8× H100 SXM 80GB ")
    assert best.offer.instance_type in line
    assert "in total" in line
    assert "within your 3.0 d deadline" in line
    assert "within your $50,000 budget" in line


def test_a_missed_deadline_is_said() -> None:
    """With the hardware fixed (no scaling out), 20B tokens cannot be done in an hour."""
    hardware = HardwareRequest(gpu_id="H100-SXM-80GB", count=8)
    rec = _rec(tokens=2e10, duration_hours=1, hardware=hardware)
    assert "missing your 1.0 h deadline" in headline(rec)


def test_without_work_stated_the_line_compares_per_billion_tokens() -> None:
    line = headline(_rec())
    assert "per billion tokens" in line
    assert "a day" in line


def test_no_option() -> None:
    rec = replace(_rec(), options=())
    assert headline(rec) == "No offer in the catalog can run this job as asked."


def test_the_table_fits_80_columns_with_long_names() -> None:
    lines = option_table(_rec(tokens=2e9))
    assert len(lines) == 4  # the header and three options
    assert max(len(line) for line in lines) <= WIDTH
    assert "…" in lines[-1] or "…" in lines[-2]


def test_each_caveat_once_with_the_options_it_concerns() -> None:
    rec = _rec(tokens=2e9)
    lines = caveat_lines(rec.options)
    texts = [c.text for c in lines]
    assert len(texts) == len(set(texts))
    shared = [c for c in lines if len(c.ranks) == len(rec.options)]
    assert all(c.label(len(rec.options)) == "[all]" for c in shared)
    assert sum(len(c.ranks) for c in lines) == sum(len(o.caveats) for o in rec.options)


def test_the_spot_source_is_cited_once_not_in_each_caveat() -> None:
    rec = _rec(tokens=2e9)
    spot = [o for o in rec.options if o.spot is not None]
    assert spot
    source = spot[0].spot.source if spot[0].spot else ""
    assert any(source in c.text for o in spot for c in o.caveats)  # as the recommender says it
    assert not any(source in c.text for c in caveat_lines(rec.options))
    cited = spot_sources(rec.options)
    assert cited.startswith("preemption rates: ")
    assert cited.count("Wait for capacity:") == 1
