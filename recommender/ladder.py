"""One layout's ladder of strategies, its memory figures read as needed, and the search for
the fewest nodes over layouts of a growing node count.

A :class:`Layout` is a GPU count and a node size with the strategies a search may try there,
cheapest first (:func:`~recommender.strategies.candidate_strategies`); each rung's per-GPU
memory and host RAM are computed the first time a search reads them and kept for the
question, since searches for several GPU types and instance shapes read the same layouts.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from recommender.memory import MemoryModel
from recommender.strategies import Strategy
from recommender.workload import Offload

__all__ = ["Layout", "Rung", "fewest_nodes", "guess_nodes", "rung_fits"]

#: One rung of a layout: the strategy, its per-GPU total and the host RAM per node, GiB.
Rung = tuple[Strategy, float, float]


def rung_fits(rung: Rung, limit: float, host_ram_gib: float | None) -> bool:
    """Whether a rung fits in ``limit`` GiB per GPU and, with offload, in the node's host RAM."""
    _, total, host = rung
    return total <= limit and (host_ram_gib is None or host <= host_ram_gib)


class Layout:
    """One layout's ladder, each rung computed when first read (see the module docstring)."""

    def __init__(
        self, memory: MemoryModel, ladder: tuple[Strategy, ...], gpus: int, gpus_per_node: int
    ) -> None:
        self.ladder = ladder
        #: Positions of every rung, and of those without offload (the ladder without
        #: offload is this one less its offload rungs: candidate_strategies).
        self.with_offload = tuple(range(len(ladder)))
        self.without_offload = tuple(
            i for i, strategy in enumerate(ladder) if strategy.offload is Offload.NONE
        )
        self._memory = memory
        self._gpus = gpus
        self._gpus_per_node = gpus_per_node
        self._rungs: list[Rung | None] = [None] * len(ladder)

    def rung(self, i: int) -> Rung:
        """Rung ``i``; a split this layout cannot host counts as infinite memory."""
        found = self._rungs[i]
        if found is None:
            strategy, gpus, per_node = self.ladder[i], self._gpus, self._gpus_per_node
            if strategy.parallel.problem(self._memory.model, gpus=gpus, gpus_per_node=per_node):
                found = (strategy, math.inf, 0.0)
            else:
                total, host = self._memory.totals(strategy, gpus=gpus, gpus_per_node=per_node)
                found = (strategy, total, host * per_node)
            self._rungs[i] = found
        return found


def fewest_nodes(fits: Callable[[int], bool], *, last: int, guess: int) -> int:
    """The fewest node count in 2..``last`` for which ``fits`` holds, given ``last`` ≥ 2 and
    that it holds for ``last``, where it is monotone; else a count that fits where one
    fewer does not.

    Two nodes are tried first; then ``guess`` (clamped to 3..``last``). When the guess
    fits, one node fewer is tried; when it does not, the search gallops up from it; either
    way it ends by bisection. The guess only decides where to look: where ``fits`` is
    monotone the answer is that of trying 2, 3, 4, ... in turn.
    """
    if last == 2 or fits(2):
        return 2
    low, high = 2, last  # fits(high) holds; low does not fit
    guess = min(max(guess, 3), last)
    if fits(guess):
        high = guess
        if guess - 1 > low and not fits(guess - 1):
            return guess
    else:
        low, step = guess, 1
        while low + step < high:
            if fits(low + step):
                high = low + step
                break
            low, step = low + step, 2 * step
    while high - low > 1:
        mid = (low + high) // 2
        if fits(mid):
            high = mid
        else:
            low = mid
    return high


def guess_nodes(
    memory: MemoryModel,
    strategy: Strategy,
    gpus_per_node: int,
    last: int,
    limit: float,
    host_ram_gib: float | None,
) -> int:
    """The fewest nodes in 2..``last`` on which ``strategy``'s memory fits, by bisection
    (beyond one data-parallel rank its per-GPU memory shrinks as nodes are added), whether
    or not the ladder of that many nodes lists it: :func:`fewest_nodes`'s guess."""
    low, high = 1, last
    while high - low > 1:
        mid = (low + high) // 2
        total, host = memory.totals(strategy, gpus=mid * gpus_per_node, gpus_per_node=gpus_per_node)
        if rung_fits((strategy, total, host * gpus_per_node), limit, host_ram_gib):
            high = mid
        else:
            low = mid
    return high
