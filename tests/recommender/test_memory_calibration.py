"""The memory model against held-out published measurements (issue #20 item 6).

Cases are in ``tests/recommender/data/memory_calibration.csv``, each with its source and the
reading chosen; ``bench/memory_calibration.py`` prints the table in docs/estimator.md.
Targets: fit/OOM verdicts at least 95 % right, median per-GPU error at most 15 %.
"""

from __future__ import annotations

import pytest

from bench.memory_calibration import estimate, load_cases, summary

RESULTS = [estimate(case) for case in load_cases()]
BEFORE = [estimate(case) for case in load_cases(before=True)]


def test_every_case_names_its_source() -> None:
    assert len(RESULTS) >= 40
    for r in RESULTS:
        assert r.case.source.startswith("github.com/"), r.case.name


def test_median_error_within_15_percent() -> None:
    median, _ = summary(RESULTS)
    assert median <= 0.15


def test_summary_pinned() -> None:
    """docs/estimator.md: 45 cases, median |error| 9.7 % (11.7 % before the bitsandbytes
    input and the pipeline-stage rules), 98 % of verdicts right."""
    median, right = summary(RESULTS)
    assert len(RESULTS) == 45
    assert median == pytest.approx(0.097, abs=0.005)
    assert right == pytest.approx(44 / 45)


def test_old_bitsandbytes_qlora_rows_within_15_percent() -> None:
    """LitGPT's QLoRA tables ran on bitsandbytes 0.41/0.42, whose 4-bit linear kept its input
    (activations.py): counted, the Llama 2 7B/13B and Llama 3 8B rows are within 15 %
    (they were −19 %, −20 %, −23 %); only QLoRA rows carry the kernel flag."""
    flagged = [r for r in RESULTS if r.case.kernels.nf4_keeps_input]
    assert {r.case.workload.method.value for r in flagged} == {"qlora"}
    for name in ("lit_l2_7b_qlora_nf4", "lit_l2_13b_qlora_nf4", "litc_l3_8b_qlora"):
        (r,) = [r for r in flagged if r.case.name == name]
        assert r.error is not None
        assert abs(r.error) <= 0.15, (name, r.error)


def test_verdicts_at_least_95_percent_right() -> None:
    _, right = summary(RESULTS)
    assert right >= 0.95


def test_better_than_before_the_savers() -> None:
    """Before the stated savers were modelled the same cases were off by a median ~28 %."""
    assert summary(RESULTS)[0] < summary(BEFORE)[0] - 0.10


@pytest.mark.parametrize(
    ("with_saver", "without", "published_saving"),
    [
        # torchtitan Table 1/3: compile saves 5.4 GiB at 8 GPUs, 5.0 at 128
        ("tt_8b_fsdp8_compile", "tt_8b_fsdp8", 5.4),
        ("tt_8b_fsdp128_compile", "tt_8b_fsdp128", 5.0),
        # torchtune 3B ladder: compile + chunked CE 60.0 → 42.9 GiB
        ("ttn_3b_packed_compile_chunkedce", "ttn_3b_packed", 17.1),
        # + activation checkpointing: 42.9 → 24.9 GiB
        ("ttn_3b_plus_ac", "ttn_3b_packed_compile_chunkedce", 18.0),
    ],
)
def test_saver_savings_match_published_ladders(
    with_saver: str, without: str, published_saving: float
) -> None:
    by_name = {r.case.name: r.estimated_gib for r in RESULTS}
    saving = by_name[without] - by_name[with_saver]
    assert saving == pytest.approx(published_saving, rel=0.5)
