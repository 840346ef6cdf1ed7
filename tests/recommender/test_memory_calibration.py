"""The memory model against published measurements (issue #20 item 6, issue #36 item 5).

Cases are in ``tests/recommender/data/memory_calibration.csv``, each with its source, the
reading chosen and its set: *calibration* rows may set constants, *validation* rows (added
with issue #36 after the model was written) never do. ``bench/memory_calibration.py`` prints
both tables in docs/estimator.md. Targets: fit/OOM verdicts at least 95 % right, median
per-GPU error at most 15 %, implied fit/OOM judgements at least 95 % right.
"""

from __future__ import annotations

import pytest

from bench.memory_calibration import estimate, implied, load_cases, summary

ALL = [estimate(case) for case in load_cases()]
RESULTS = [r for r in ALL if r.case.set == "calibration"]
VALIDATION = [r for r in ALL if r.case.set == "validation"]
BEFORE = [estimate(case) for case in load_cases(before=True) if case.set == "calibration"]


def test_every_case_names_its_source() -> None:
    assert len(RESULTS) >= 40
    for r in ALL:
        assert r.case.source.startswith("github.com/"), r.case.name


def test_the_split_is_explicit() -> None:
    """Every row is in exactly one set, named once; the validation set has its own rows."""
    assert {r.case.set for r in ALL} == {"calibration", "validation"}
    names = [r.case.name for r in ALL]
    assert len(names) == len(set(names))
    assert len(VALIDATION) >= 15


def test_median_error_within_15_percent() -> None:
    median, _ = summary(RESULTS)
    assert median <= 0.15


def test_summary_pinned() -> None:
    """docs/estimator.md: calibration 45 cases, median |error| 8.9 % (9.7 % before issue #36's
    working sets, 11.7 % before the bitsandbytes input and the pipeline-stage rules), 98 % of
    verdicts right, implied fit/OOM 117 of 127 right."""
    median, right = summary(RESULTS)
    assert len(RESULTS) == 45
    assert median == pytest.approx(0.089, abs=0.005)
    assert right == pytest.approx(44 / 45)
    assert implied(RESULTS) == (117, 127)


def test_validation_pinned() -> None:
    """docs/estimator.md, the validation set (never tuned on): 19 cases, median |error|
    11.8 % (n = 17), 18 of 19 verdicts right, implied fit/OOM 50 of 60 right (83 %, below the
    95 % target: the misses are listed there)."""
    median, right = summary(VALIDATION)
    assert len(VALIDATION) == 19
    assert median == pytest.approx(0.118, abs=0.005)
    assert right == pytest.approx(18 / 19)
    assert implied(VALIDATION) == (50, 60)


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
