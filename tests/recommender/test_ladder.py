"""The node-count search and the memory figures it reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recommender.ladder import fewest_nodes
from recommender.memory import MemoryModel
from recommender.model_states import regime
from recommender.strategies import candidate_strategies
from recommender.workload import Method, Offload, Precision, Sharding, Workload
from tests.factories import model, workload


def _probed(predicate: list[bool]) -> tuple[list[int], Callable[[int], bool]]:
    """``fits`` over node counts 0..len-1 from a list, and the counts it was asked about."""
    asked: list[int] = []

    def fits(nodes: int) -> bool:
        asked.append(nodes)
        return predicate[nodes]

    return asked, fits


@given(
    last=st.integers(min_value=2, max_value=64),
    threshold=st.integers(min_value=2, max_value=64),
    guess=st.integers(min_value=-5, max_value=80),
)
def test_monotone_fits_gives_the_fewest_whatever_the_guess(
    last: int, threshold: int, guess: int
) -> None:
    """Where fitting is monotone the search returns what trying 2, 3, 4, ... returns."""
    threshold = min(threshold, last)  # ``last`` fits
    predicate = [n >= threshold for n in range(last + 1)]
    _, fits = _probed(predicate)
    assert fewest_nodes(fits, last=last, guess=guess) == threshold


@given(st.lists(st.booleans(), min_size=3, max_size=65), st.integers(0, 70))
def test_non_monotone_fits_gives_a_count_that_fits_where_one_fewer_does_not(
    pattern: list[bool], guess: int
) -> None:
    pattern[-1] = True  # ``last`` fits
    last = len(pattern) - 1
    _, fits = _probed(pattern)
    found = fewest_nodes(fits, last=last, guess=guess)
    assert pattern[found]
    assert found == 2 or not pattern[found - 1]


def test_a_good_guess_needs_few_probes() -> None:
    """The guess is where the search looks: right, it costs four probes, not a gallop."""
    predicate = [n >= 37 for n in range(65)]
    asked, fits = _probed(predicate)
    assert fewest_nodes(fits, last=64, guess=37) == 37
    assert asked == [2, 37, 36]


#: Workloads that exercise every memory term: full sharding under a pipeline, offload,
#: paged optimizers, LoRA, QLoRA, a mixture of experts.
_WORKLOADS = [
    workload(),
    workload(model=model("Llama 3 70B"), method=Method.PRETRAIN),
    workload(model=model("Llama 3 70B"), sharding=Sharding.ZERO3, offload=Offload.OPTIMIZER),
    workload(method=Method.LORA),
    workload(method=Method.QLORA, model=model("Llama 3 70B")),
    workload(model=model("Mixtral 8x7B")),
]
_LAYOUTS = [(1, 1), (2, 2), (8, 8), (16, 8), (24, 8), (512, 8), (6, 2)]


@pytest.mark.parametrize("w", _WORKLOADS, ids=lambda w: f"{w.model.name} {w.method}")
def test_totals_are_the_breakdown_total(w: Workload) -> None:
    """The search's figure per strategy and the plan's breakdown are one computation."""
    memory = MemoryModel(w)
    for gpus, per_node in _LAYOUTS:
        for nvlink in (True, False):
            ladder = candidate_strategies(
                w, gpus=gpus, nodes=gpus // per_node, gpus_per_node=per_node, nvlink=nvlink
            )
            for s in ladder:
                total, host = memory.totals(s, gpus=gpus, gpus_per_node=per_node)
                mem = memory.breakdown(s, gpus=gpus, gpus_per_node=per_node)
                assert total == pytest.approx(mem.total_gib, rel=1e-12)
                assert host == pytest.approx(mem.cpu_offload_gib, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("w", _WORKLOADS, ids=lambda w: f"{w.model.name} {w.method}")
def test_memory_depends_on_the_precision_only_through_its_regime(w: Workload) -> None:
    """What lets a GPU without bf16 (trained in fp16) read the bf16 search's figures."""
    base = MemoryModel(w)
    for precision in Precision:
        if regime(precision) is not regime(w.precision):
            continue
        other = MemoryModel(replace(w, precision=precision))
        for gpus, per_node in _LAYOUTS:
            ladder = candidate_strategies(
                w, gpus=gpus, nodes=gpus // per_node, gpus_per_node=per_node
            )
            for s in ladder:
                kw = {"gpus": gpus, "gpus_per_node": per_node}
                assert other.breakdown(s, **kw) == base.breakdown(s, **kw), (precision, s)
