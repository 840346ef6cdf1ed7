"""Whole-run cost and spot economics on top of the provider billing rules.

What a team pays depends on how the provider meters time and its minimum charge (each
cloud's rule, with its sources, is in its module of recommender/providers/) and, on spot, the
work lost to preemptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from recommender import providers

# The rule's type lives in billing_rules.py and each cloud's rule in its provider module;
# they are re-exported here for callers.
from recommender.pricing.billing_rules import (
    DEFAULT_RULE,
    HOUR_S,
    HOURS_PER_MONTH,
    BillingRule,
    billed_hours,
)
from recommender.pricing.spot import SpotRange, capacity_wait
from recommender.pricing.spot import interruption_range as _interruption_range
from recommender.providers import RULES, rule_for

__all__ = [
    "DEFAULT_RULE",
    "HOURS_PER_MONTH",
    "RULES",
    "BillingRule",
    "SpotCase",
    "SpotEconomics",
    "billed_hours",
    "interruption_range",
    "interruptions_per_hour",
    "rule_for",
    "spot_economics",
]


def interruption_range(rule: BillingRule, nodes: int, gpu_id: str | None = None) -> SpotRange:
    """Preemptions per hour of a job on ``nodes`` spot instances, as a range with its source.

    A synchronous job stops when any one node is preempted, so the per-node rate is multiplied
    by the node count (independent nodes: the minimum of n exponential lifetimes has n × the
    rate).
    """
    terms = providers.get(rule.provider).spot
    per_node = _interruption_range(terms, gpu_id, rule.spot_interruptions_per_hour)
    return per_node.scaled(max(1, nodes))


def interruptions_per_hour(rule: BillingRule, nodes: int, gpu_id: str | None = None) -> float:
    """Expected preemptions per hour of a job on ``nodes`` spot instances (any one stops it)."""
    return interruption_range(rule, nodes, gpu_id).expected


# Restarting after a preemption once capacity is back: pull the image, load the checkpoint and
# warm up. 10 minutes is typical for a single node (ours; SkyPilot managed-job recovery logs).
# It is billed; the wait for capacity before it (spot.capacity_wait) is not.
RESTART_S = 600
# A job on N spot nodes runs only when all N are held, so after a preemption it waits for the
# last of N nodes to come back. With each node's wait exponential with mean w (the outage
# traces above are heavy-tailed, so this is the mild case), the wait for the last of N is the
# maximum of N such waits, whose mean is w·H_N, H_N = 1 + 1/2 + … + 1/N (the harmonic number;
# any order-statistics text, e.g. David & Nagaraja, "Order Statistics", §3.1). The first start
# waits the same way beyond one node: a single node is launched where capacity is listed now
# (SkyPilot fails over across regions), a gang needs N free in one zone at once.


def gang_factor(nodes: int) -> float:
    """H_N: how many single-node waits the wait for the last of ``nodes`` spot nodes is."""
    return sum(1 / k for k in range(1, max(1, nodes) + 1))


# Beyond this exponent a case never finishes in practice; capping it keeps figures finite.
_MAX_EXPONENT = 50.0


@dataclass(frozen=True, slots=True)
class SpotCase:
    """One end of the spot range for a run of ``hours`` of training compute."""

    interruptions_per_hour: float
    #: Hours each preemption waits for capacity to return (not billed).
    wait_hours: float
    #: Fraction of extra billed time: checkpoint writes + lost work + restarts.
    overhead_frac: float
    expected_interruptions: float
    #: Billed running hours: compute hours × (1 + overhead).
    run_hours: float
    #: Wall-clock hours: running hours plus every wait for capacity, the start's included.
    elapsed_hours: float
    #: Hours a gang of nodes waits before it can start, beyond one node (not billed).
    start_wait_hours: float = 0.0

    @property
    def mtbf_hours(self) -> float:
        return math.inf if self.interruptions_per_hour <= 0 else 1 / self.interruptions_per_hour


@dataclass(frozen=True, slots=True)
class SpotEconomics:
    """Cost of preemptions for a job on spot capacity: the expected case in the first
    fields, the optimistic and pessimistic ends in :attr:`optimistic` / :attr:`pessimistic`."""

    interruptions_per_hour: float
    checkpoint_gib: float
    checkpoint_write_s: float
    #: Young/Daly optimum √(2·C·MTBF) for the expected rate, in hours; every case uses it.
    checkpoint_interval_hours: float
    restart_s: float
    #: Fraction of extra billed time: checkpoint writes + lost work + restarts.
    overhead_frac: float
    expected_interruptions: float
    nodes: int = 1
    #: Expected hours each preemption waits for capacity to return (not billed), for the
    #: last of the job's nodes.
    wait_hours: float = 0.0
    #: Expected billed running hours and wall-clock hours (running + waits) of the run.
    run_hours: float = 0.0
    elapsed_hours: float = 0.0
    optimistic: SpotCase | None = None
    pessimistic: SpotCase | None = None
    #: Where the interruption rate and the capacity wait come from.
    source: str = ""
    #: Expected hours a gang of nodes waits to start, beyond one node (not billed).
    start_wait_hours: float = 0.0

    @property
    def mtbf_hours(self) -> float:
        return math.inf if self.interruptions_per_hour <= 0 else 1 / self.interruptions_per_hour

    @property
    def pessimistic_hours(self) -> float:
        """Wall-clock hours of the run at the pessimistic end (rate, wait)."""
        return self.pessimistic.elapsed_hours if self.pessimistic else self.elapsed_hours

    @property
    def optimistic_hours(self) -> float:
        return self.optimistic.elapsed_hours if self.optimistic else self.elapsed_hours


def _overhead(rate: float, tau_s: float, write_s: float, restart_s: float) -> float:
    """Extra time per unit of compute with exponential preemptions at ``rate`` per hour,
    checkpointing every ``tau_s`` of compute (Daly 2006, eq. 20, complete first-failure model):
    T_wall / T_solve = (M/τ) · e^(R/M) · (e^((τ+C)/M) − 1), less one. To first order this is
    Young's C/τ + τ/(2M) + R/M; unlike it, it grows without bound when M nears τ."""
    if rate <= 0:
        return write_s / tau_s if math.isfinite(tau_s) else 0.0
    m = HOUR_S / rate
    x = min((tau_s + write_s) / m, _MAX_EXPONENT)
    r = min(restart_s / m, _MAX_EXPONENT)
    return m / tau_s * math.exp(r) * math.expm1(x) - 1


def _case(
    rate: float, wait_h: float, tau_s: float, write_s: float, hours: float, nodes: int = 1
) -> SpotCase:
    """One end of the range: ``wait_h`` is one node's wait; a gang waits for its last node
    (:func:`gang_factor`) after each preemption, and that much beyond one node at the start."""
    overhead = max(_overhead(rate, tau_s, write_s, RESTART_S), 0.0)
    run = hours * (1 + overhead)
    n = rate * run
    gang = gang_factor(nodes)
    wait = wait_h * gang
    start = wait_h * (gang - 1)
    return SpotCase(rate, wait, overhead, n, run, run + n * wait + start, start)


def spot_economics(
    rule: BillingRule,
    *,
    nodes: int,
    checkpoint_gib: float,
    hours: float,
    gpu_id: str | None = None,
) -> SpotEconomics:
    """Cost of preemptions for ``hours`` of compute on ``nodes`` spot instances of ``gpu_id``.

    The checkpoint interval is Young's optimum τ = √(2·C·M) for the expected MTBF M and write
    time C (Young 1974); a team picks it once, so the optimistic and pessimistic ends keep the
    same τ and only their rate and wait for capacity differ. Each case's overhead is Daly's
    (2006) complete model; each preemption then waits for capacity (unbilled) and restarts.
    """
    rates = interruption_range(rule, nodes, gpu_id)
    waits = capacity_wait(gpu_id)
    write_s = checkpoint_gib * 2**30 / 1e9 / rule.checkpoint_write_gb_per_s
    source = f"rate: {rates.source}; wait for capacity: {waits.source}"
    if rates.expected <= 0:
        none = _case(0.0, 0.0, math.inf, write_s, hours)
        return SpotEconomics(
            0.0, checkpoint_gib, write_s, math.inf, RESTART_S, 0.0, 0.0, max(1, nodes),
            0.0, hours, hours, none, none, rates.source,
        )  # fmt: skip
    tau_s = math.sqrt(2 * max(write_s, 1.0) * HOUR_S / rates.expected)
    opt = _case(rates.optimistic, waits.optimistic, tau_s, write_s, hours, nodes)
    exp = _case(rates.expected, waits.expected, tau_s, write_s, hours, nodes)
    pess = _case(rates.pessimistic, waits.pessimistic, tau_s, write_s, hours, nodes)
    return SpotEconomics(
        interruptions_per_hour=rates.expected,
        checkpoint_gib=checkpoint_gib,
        checkpoint_write_s=write_s,
        checkpoint_interval_hours=tau_s / HOUR_S,
        restart_s=RESTART_S,
        overhead_frac=exp.overhead_frac,
        expected_interruptions=exp.expected_interruptions,
        nodes=max(1, nodes),
        wait_hours=exp.wait_hours,
        start_wait_hours=exp.start_wait_hours,
        run_hours=exp.run_hours,
        elapsed_hours=exp.elapsed_hours,
        optimistic=opt,
        pessimistic=pess,
        source=source,
    )
