"""The memory model against published measurements (issue #20 item 6, issue #36 item 5).

Cases are in ``tests/recommender/data/memory_calibration.csv``, each with its source, the
reading chosen and its set: *calibration* rows may set constants, *validation* rows (added
with issue #36 after the model was written) never do. ``bench/memory_calibration.py`` prints
both tables in docs/estimator.md. Targets: fit/OOM verdicts at least 95 % right, median
per-GPU error at most 15 %, implied fit/OOM judgements at least 95 % right.
"""

from __future__ import annotations

from dataclasses import replace

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
    """docs/estimator.md: calibration 47 cases, median |error| 8.9 % (9.7 % before issue #36's
    working sets, 11.7 % before the bitsandbytes input and the pipeline-stage rules), 46 of 47
    verdicts right, implied fit/OOM 86 of 92 right (117 of 127 judging every capacity)."""
    median, right = summary(RESULTS)
    assert len(RESULTS) == 47
    assert median == pytest.approx(0.089, abs=0.005)
    assert right == pytest.approx(46 / 47)
    assert implied(RESULTS) == (86, 92)
    assert implied(RESULTS, every_capacity=True) == (117, 127)


def test_validation_pinned() -> None:
    """docs/estimator.md, the validation set (never tuned on): 19 cases, median |error|
    6.3 % (n = 17), 19 of 19 verdicts right, implied fit/OOM 41 of 41 right (54 of 60
    judging every capacity: the torchtitan rows at 80 GB and one PEFT row at 16 GB)."""
    median, right = summary(VALIDATION)
    assert len(VALIDATION) == 19
    assert median == pytest.approx(0.063, abs=0.005)
    assert right == 1.0
    assert implied(VALIDATION) == (41, 41)
    assert implied(VALIDATION, every_capacity=True) == (54, 60)


def test_validation_meets_the_targets() -> None:
    """Issue #36 item 5 on the held-out rows: verdicts ≥ 95 %, median ≤ 15 %, implied ≥ 95 %."""
    median, right = summary(VALIDATION)
    good, judged = implied(VALIDATION)
    assert right >= 0.95
    assert median <= 0.15
    assert good / judged >= 0.95


def test_a_reserved_figure_from_a_larger_card_implies_no_oom_below_it() -> None:
    """torchtune's 8B LoRA recipe: 30.3 GiB reserved on a 48 GB A6000, 16.2 GiB on a 24 GB
    4090. The A6000 figure judges 40 and 48 GB (fits) but not 16 or 24 GB (the allocator
    would have released its cache there), unless every capacity is judged, where 24 GB is
    wrongly called an OOM; an allocated figure judges the capacities below it too."""
    (a6000,) = [r for r in RESULTS if r.case.name == "ttn_8b_lora_a6000"]
    assert implied([a6000]) == (2, 2)
    assert implied([a6000], every_capacity=True) == (3, 4)  # 24 GB: the 4090 row fits it
    (lit,) = [r for r in RESULTS if r.case.name == "litc_l3_8b_qlora"]
    assert lit.case.metric == "allocated"
    assert implied([lit])[1] == implied([lit], every_capacity=True)[1]


def test_litgpt_fsdp_rows_hold_the_unsharded_gradients() -> None:
    """LitGPT LoRA on 2 and 4 A100s (lit-gpt 8641822: FSDP1 flat parameters mixing the frozen
    base and LoRA, accumulating under no_sync): the per-GPU peak is the whole bf16 gradient
    of the blocks beside the shard, within 15 % on every row; 13B on 2 GPUs runs out."""
    rows = [r for r in VALIDATION if r.case.kernels.flat_frozen_grads]
    assert len(rows) == 5
    for r in rows:
        if r.error is None:
            assert not r.fits
            assert not r.case.fits
        else:
            assert abs(r.error) <= 0.15, (r.case.name, r.error)


def test_litgpt_full_fine_tunes_on_four_a10g_run_out_through_accumulation() -> None:
    """LitGPT's config hub: Llama 2 7B and Llama 3 8B full.yaml on 4x A10G run out of memory.
    With the whole gradient accumulated on every GPU (no_backward_sync) they do; with
    sharded gradients (the same run without LitGPT's accumulation) both would fit."""
    rows = [r for r in RESULTS if r.case.name.endswith("_full_4xa10g_oom")]
    assert len(rows) == 2
    for r in rows:
        assert r.verdict_right
        assert not r.fits
        sharded = estimate(replace(r.case, workload=replace(r.case.workload, framework=None)))
        assert sharded.fits, r.case.name


def test_old_bitsandbytes_qlora_rows_closer() -> None:
    """LitGPT's QLoRA tables ran on bitsandbytes 0.41/0.42, whose 4-bit linear kept its input
    (activations.py): counted, every flagged row is closer to its published peak, and the
    Llama 2 7B/13B rows are within 15 % (−8 % each; Llama 3 8B is −18 %, listed in
    docs/estimator.md); only QLoRA rows carry the kernel flag."""
    flagged = [r for r in RESULTS if r.case.kernels.nf4_keeps_input]
    assert {r.case.workload.method.value for r in flagged} == {"qlora"}
    for r in flagged:
        without = estimate(replace(r.case, kernels=replace(r.case.kernels, nf4_keeps_input=False)))
        assert r.error is not None
        assert without.error is not None
        assert abs(r.error) < abs(without.error), r.case.name
    for name in ("lit_l2_7b_qlora_nf4", "lit_l2_13b_qlora_nf4"):
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
