"""What an answer optimises, read from what the user asked, and the score it ranks by.

The rule, stated in every answer (:attr:`PlanObjective.text`) and in the JSON:

* **Work and a time** (tokens, a dataset, steps or epochs, and "in 3 weeks" / "by Friday"):
  the time is a deadline. The cheapest plan that meets it wins, scaling out to more nodes
  as needed; a plan that misses it never ranks above one that meets it. Spot plans meet it
  only if their pessimistic hours do.
* **A time alone** ("13B full finetune 2 days"): the time is the length of the run; the work
  is what it buys on a reference node (:mod:`recommender.ranking.work`). The cheapest plan for that
  work wins; only the hours a plan takes beyond the stated length count against it, at the
  time value below (finishing sooner than asked is worth nothing extra).
* **A budget alone**: the budget buys work; each option shows the tokens and days it buys.
* **Hardware the team already owns**: the time on it, at $0 rental; rented plans are shown
  beside it only where they meet a deadline it misses.
* **Otherwise** time has value: each day a run takes counts as
  :data:`DEFAULT_TIME_VALUE_USD_PER_DAY` of the team's time (``time is worth $2k/day``
  sets it, ``no rush`` or ``cheapest`` makes it zero, ``asap`` makes it
  :data:`URGENT_TIME_VALUE_USD_PER_DAY`), so a plan that takes four times longer never wins
  by saving a few percent.

In every case spot is judged on its worst case too: :data:`RISK_WEIGHT` of the gap between a
spot plan's worst-case and expected cost (time included, at the time value) counts against
it, and :func:`too_risky` puts a spot plan whose worst case costs far more than the sure
on-demand plan below that plan. Spot's worst case is taken at the estimate
(``Economics.spot_worst_*``): a fine-tune's time range stretches every option of a workload
alike, so it stays out of the comparison (it is in each plan's pessimistic hours).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from recommender.units import hours_text
from recommender.workload import Urgency, Workload

__all__ = [
    "DEFAULT_TIME_VALUE_USD_PER_DAY",
    "RISK_WEIGHT",
    "SPOT_WORST_CASE_FACTOR",
    "URGENT_TIME_VALUE_USD_PER_DAY",
    "ObjectiveKind",
    "PlanObjective",
    "objective_of",
    "too_risky",
]

#: What a day of waiting is worth when the user does not say: about one ML engineer-day
#: fully loaded, the least a team loses while a run is pending (ours; stated in every
#: answer that uses it, and set with ``time is worth $X/day`` or ``no rush``).
DEFAULT_TIME_VALUE_USD_PER_DAY = 500.0
#: What a day is worth when the user says ``asap`` / ``fastest`` / ``urgent``: ten of those
#: engineer-days, a team blocked on the run (ours; stated in the answer, and a stated
#: ``time is worth $X/day`` wins over it).
URGENT_TIME_VALUE_USD_PER_DAY = 5000.0
#: Share of a spot plan's worst-case excess (cost, and time at its value) that counts
#: against it: spot's pessimistic end is a bad-week outcome, not a rare tail (ours).
RISK_WEIGHT = 0.5
#: A spot plan whose worst case costs more than this multiple of the sure on-demand plan's
#: expected cost ranks below the sure plans and carries a high-severity caveat (ours).
SPOT_WORST_CASE_FACTOR = 1.5


class ObjectiveKind(StrEnum):
    CHEAPEST_MEETING_DEADLINE = "cheapest_meeting_deadline"
    CHEAPEST_FOR_DURATION = "cheapest_for_duration"
    MOST_WORK_FOR_BUDGET = "most_work_for_budget"
    CHEAPEST_WITHIN_BUDGET = "cheapest_within_budget"
    CHEAPEST_COUNTING_TIME = "cheapest_counting_time"
    CHEAPEST_PER_TOKEN_COUNTING_TIME = "cheapest_per_token_counting_time"
    OWNED_HARDWARE = "owned_hardware"


@dataclass(frozen=True, slots=True)
class PlanObjective:
    """What the answer optimised: its kind, and the figures it used."""

    kind: ObjectiveKind
    #: Dollars one day of the run counts for on top of its cost (0: no rush).
    time_value_usd_per_day: float
    deadline_hours: float | None = None
    budget_usd: float | None = None
    #: Whether the time value is the default or the user's.
    time_value_stated: bool = False
    #: The run length the user stated (a time alone): only hours beyond it count.
    duration_hours: float | None = None
    #: ``cheapest`` / ``asap`` in the question, when it set the time value.
    urgency: Urgency | None = None

    @property
    def per_token(self) -> bool:
        """Options train different amounts of work and are compared per token."""
        return self.kind in (
            ObjectiveKind.MOST_WORK_FOR_BUDGET,
            ObjectiveKind.CHEAPEST_PER_TOKEN_COUNTING_TIME,
        )

    @property
    def counts_time(self) -> bool:
        """Whether a day of running costs :attr:`time_value_usd_per_day` in the score (with
        a deadline, only meeting it matters)."""
        return self.kind is not ObjectiveKind.CHEAPEST_MEETING_DEADLINE

    def score(
        self,
        *,
        expected_cost_usd: float,
        worst_cost_usd: float,
        wall_hours: float,
        worst_wall_hours: float,
        tokens: float,
    ) -> float:
        """The figure options are ranked by, lower first (see the module docstring): cost,
        plus the time at its value, plus :data:`RISK_WEIGHT` of spot's worst case's excess
        (``worst_*``: the expected figures on demand);
        per billion tokens when options train different amounts."""
        per_day = self.time_value_usd_per_day if self.counts_time else 0.0
        free = self.duration_hours or 0.0  # hours within the stated run length cost nothing

        def waiting(hours: float) -> float:
            return per_day * max(hours - free, 0.0) / 24

        excess = (worst_cost_usd - expected_cost_usd) + (
            waiting(worst_wall_hours) - waiting(wall_hours)
        )
        value = expected_cost_usd + waiting(wall_hours) + RISK_WEIGHT * max(excess, 0.0)
        if self.per_token:
            return value / (tokens / 1e9) if tokens > 0 else float("inf")
        return value

    @property
    def text(self) -> str:
        """One line: what was optimised, with its figures."""
        value = self._time_value_text()
        if self.kind is ObjectiveKind.CHEAPEST_MEETING_DEADLINE:
            return (
                f"objective: the cheapest plan that finishes within "
                f"{hours_text(self.deadline_hours or 0.0)} (spot by its worst case), "
                "adding nodes as needed"
            )
        if self.kind is ObjectiveKind.OWNED_HARDWARE:
            deadline = (
                f"; rented plans shown where they meet the {hours_text(self.deadline_hours)} "
                "deadline your GPUs miss"
                if self.deadline_hours is not None
                else ""
            )
            return f"objective: the time on the GPUs you already have, at $0 rental{deadline}"
        if self.kind is ObjectiveKind.MOST_WORK_FOR_BUDGET:
            return (
                f"objective: the most training your ${self.budget_usd or 0:,.0f} buys; "
                f"time counts at {value}"
            )
        if self.kind is ObjectiveKind.CHEAPEST_WITHIN_BUDGET:
            budget = f"${self.budget_usd or 0:,.0f}"
            return f"objective: the lowest cost within {budget}; time counts at {value}"
        if self.kind is ObjectiveKind.CHEAPEST_FOR_DURATION:
            span = hours_text(self.duration_hours or 0.0)
            return (
                f"objective: the lowest cost for what {span} buys; "
                f"hours past {span} count at {value}"
            )
        if self.kind is ObjectiveKind.CHEAPEST_PER_TOKEN_COUNTING_TIME:
            return f"objective: the lowest cost per billion tokens; time counts at {value}"
        return f"objective: the lowest cost for the work; time counts at {value}"

    def _time_value_text(self) -> str:
        if self.urgency is Urgency.CHEAPEST:
            return "$0 a day (you asked for the cheapest)"
        if self.urgency is Urgency.FASTEST:
            return (
                f"${self.time_value_usd_per_day:,.0f} a day (you asked for it fast; "
                "say `time is worth $X/day` to change)"
            )
        if self.time_value_usd_per_day == 0:
            return "$0 a day (no rush)"
        how = (
            "as you said" if self.time_value_stated else "say `time is worth $2k/day` or `no rush`"
        )
        return f"${self.time_value_usd_per_day:,.0f} a day ({how})"


def objective_of(workload: Workload) -> PlanObjective:
    """The objective the user's question asks for (see the module docstring)."""
    stated = workload.time_value_usd_per_day is not None
    urgency = None if stated else workload.urgency
    if workload.time_value_usd_per_day is not None:
        per_day = workload.time_value_usd_per_day
    elif urgency is Urgency.CHEAPEST:
        per_day = 0.0
    elif urgency is Urgency.FASTEST:
        per_day = URGENT_TIME_VALUE_USD_PER_DAY
    else:
        per_day = DEFAULT_TIME_VALUE_USD_PER_DAY
    deadline = workload.deadline_hours
    budget = workload.budget_usd

    def make(kind: ObjectiveKind) -> PlanObjective:
        duration = workload.duration_hours if kind is ObjectiveKind.CHEAPEST_FOR_DURATION else None
        return PlanObjective(
            kind, per_day, deadline, budget, stated or urgency is not None, duration, urgency
        )

    if workload.owned:
        return make(ObjectiveKind.OWNED_HARDWARE)
    if deadline is not None:
        return make(ObjectiveKind.CHEAPEST_MEETING_DEADLINE)
    if workload.tokens is not None:
        kind = (
            ObjectiveKind.CHEAPEST_WITHIN_BUDGET if budget else ObjectiveKind.CHEAPEST_COUNTING_TIME
        )
        return make(kind)
    if workload.duration_hours is not None:
        return make(ObjectiveKind.CHEAPEST_FOR_DURATION)
    if budget is not None:
        return make(ObjectiveKind.MOST_WORK_FOR_BUDGET)
    return make(ObjectiveKind.CHEAPEST_PER_TOKEN_COUNTING_TIME)


def too_risky(worst_cost_usd: float, sure_cost_usd: float | None) -> bool:
    """A spot plan whose worst case costs more than :data:`SPOT_WORST_CASE_FACTOR` × the
    sure on-demand plan's expected cost (``None``: no on-demand plan to compare with)."""
    return sure_cost_usd is not None and worst_cost_usd > (SPOT_WORST_CASE_FACTOR * sure_cost_usd)
