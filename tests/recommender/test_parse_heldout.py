"""The phrasing sets of issue #35 item 6: realistic questions a domain expert asks, judged on
what they meant (``bench/phrasings.py`` says how). Targets: ≥ 95 % read as meant, no
traceback, no number silently dropped. The held-out sets are never tuned on; the
development set is."""

from __future__ import annotations

import pytest

from bench.phrasings import SETS, judge

TARGET = 0.95  # issue #35 item 6
#: Questions a set holds at least: 60 for the helpers' held-out sets, the lead's 40, dev 30.
MIN_SIZE = {"dev": 30, "heldout_lead": 40, "heldout_lead2": 40, "heldout_lead3": 40}


@pytest.mark.parametrize("name", sorted(SETS))
def test_the_set_is_read_as_meant(name: str) -> None:
    report = judge(SETS[name])
    assert report.total >= MIN_SIZE.get(name, 60)
    assert report.tracebacks == []
    assert report.drops == []
    assert report.share >= TARGET, "\n".join(report.misses)
