"""Billing rules: how providers meter time, and what preemptions cost on spot."""

from __future__ import annotations

import math

import pytest

from recommender.feeds.skypilot import CLOUDS
from recommender.pricing.billing import (
    DEFAULT_RULE,
    RULES,
    billed_hours,
    interruptions_per_hour,
    rule_for,
    spot_economics,
)
from recommender.ranking.caveats import CaveatKind
from recommender.ranking.recommend import recommend
from tests.factories import NOW, SOURCE, catalog, offer, workload


class TestRules:
    def test_every_rule_names_its_source_and_date(self) -> None:
        """Each provider rule cites where it was read and when."""
        for rule in RULES.values():
            assert rule.source
            assert rule.as_of.year >= 2025

    def test_unknown_provider_gets_the_conservative_default(self) -> None:
        """A provider without a rule is billed hourly with a one-hour minimum."""
        rule = rule_for("some-new-cloud")
        assert rule.provider == "some-new-cloud"
        assert rule.known is False
        assert rule.source == DEFAULT_RULE.source
        assert rule.granularity_s == 3600
        assert rule.minimum_s == 3600

    def test_every_cloud_read_has_its_own_rule(self) -> None:
        """Every SkyPilot cloud gpufit reads has an explicit rule, never the fallback: a known
        one with its source, or one marked unknown that says it assumes whole hours."""
        for cloud in CLOUDS:
            rule = rule_for(cloud)
            assert rule is not DEFAULT_RULE, cloud
            assert rule.provider == cloud
            if not rule.known:
                assert (rule.granularity_s, rule.minimum_s) == (3600, 3600), cloud
                assert rule.source == "unknown: billed per hour as a conservative assumption"

    @pytest.mark.parametrize(
        ("provider", "said"),
        [
            # The clouds whose own pages state no metering unit (each one's provider module
            # says what was searched); a cloud moves out of this list only with a sourced rule.
            *(
                (cloud, True)
                for cloud in (
                    *("fluidstack", "hyperbolic", "hyperstack", "lium", "mithril", "paperspace"),
                    *("primeintellect", "scp", "seeweb", "shadeform", "verda", "yotta"),
                )
            ),
            ("some-new-cloud", True),
            ("aws", False),
            ("cudo", False),
        ],
    )
    def test_an_unknown_billing_rule_is_said_in_the_answer(self, provider: str, said: bool) -> None:
        """An option on a cloud whose metering is unknown says so; a known one does not."""
        assert rule_for(provider).known is not said
        o = offer(provider=provider, source=SOURCE)
        rec = recommend(workload(), catalog(o), now=NOW)
        texts = [c.text for c in rec.options[0].caveats if c.kind is CaveatKind.BILLING]
        assert any("billing unit is unknown" in t for t in texts) is said, provider

    def test_lookup_is_case_insensitive(self) -> None:
        """Provider ids match regardless of case."""
        assert rule_for("AWS") is RULES["aws"]

    def test_lambda_sells_no_spot(self) -> None:
        """Lambda's rule records that it has no spot market."""
        assert RULES["lambda"].spot_available is False


class TestBilledHours:
    @pytest.mark.parametrize(
        ("provider", "hours", "billed"),
        [
            ("aws", 1.5, 1.5),  # per second
            ("aws", 10 / 3600, 60 / 3600),  # 10 s billed as the 60 s minimum
            ("lambda", 1.001, 61 / 60),  # per minute, rounded up
            ("gcp", 48.0, 48.0),
        ],
    )
    def test_provider_granularity_and_minimum(
        self, provider: str, hours: float, billed: float
    ) -> None:
        """Usage is rounded up to the provider's unit and never below its minimum."""
        assert billed_hours(rule_for(provider), hours) == pytest.approx(billed)

    @pytest.mark.parametrize(
        ("provider", "minutes", "billed_minutes"),
        [
            ("daytona", 61, 61),  # per second, no minimum
            ("daytona", 0.5, 0.5),  # 30 s billed as 30 s
            ("cudo", 61, 61),  # per second, no minimum
            ("cudo", 90.25, 90.25),
            ("spheron", 61, 61),  # per second above the minimum
            ("spheron", 10, 20),  # below the 20-minute minimum runtime
            ("spheron", 20.5, 20.5),
            ("hyperstack", 61, 120),  # still unknown: whole hours
            ("verda", 61, 120),
            ("yotta", 10, 60),  # the one-hour minimum
        ],
    )
    def test_newly_sourced_clouds_bill_as_their_docs_say(
        self, provider: str, minutes: float, billed_minutes: float
    ) -> None:
        """Clouds whose own docs state the metering bill by it; the rest stay whole hours."""
        rule = rule_for(provider)
        assert rule.provider == provider
        assert billed_hours(rule, minutes / 60) * 60 == pytest.approx(billed_minutes)

    def test_sourced_clouds_are_known_and_cite_their_own_docs(self) -> None:
        """Cudo, Daytona and Spheron are known rules whose source is the provider's own site."""
        for provider, site in (
            ("cudo", "cudocompute.com"),
            ("daytona", "daytona.io"),
            ("spheron", "docs.spheron."),
        ):
            rule = RULES[provider]
            assert rule.known, provider
            assert site in rule.source, provider
        assert RULES["spheron"].spot_available

    def test_ninety_minutes_on_an_hourly_provider_costs_two_hours(self) -> None:
        """The issue's example: hourly billing rounds 90 minutes up to 2 hours."""
        assert billed_hours(DEFAULT_RULE, 1.5) == 2.0

    def test_whole_hours_are_not_rounded_up_by_float_noise(self) -> None:
        """Exactly 2 h on an hourly rule stays 2 h."""
        assert billed_hours(DEFAULT_RULE, 2.0) == 2.0
        assert billed_hours(DEFAULT_RULE, 0.1 * 3 / 0.3 * 2) == 2.0

    def test_nothing_used_nothing_billed(self) -> None:
        """Zero hours cost nothing (no minimum charge for a job that never ran)."""
        assert billed_hours(RULES["aws"], 0) == 0.0


class TestSpotEconomics:
    def test_young_daly_interval(self) -> None:
        """The checkpoint interval is √(2·C·MTBF) for write time C."""
        rule = RULES["gcp"]
        econ = spot_economics(rule, nodes=1, checkpoint_gib=100, hours=10)
        c = econ.checkpoint_write_s
        mtbf_s = econ.mtbf_hours * 3600
        assert econ.checkpoint_interval_hours * 3600 == pytest.approx(math.sqrt(2 * c * mtbf_s))

    def test_more_nodes_means_more_interruptions(self) -> None:
        """A job stops when any node is preempted, so the rate scales with node count."""
        rule = RULES["aws"]
        assert interruptions_per_hour(rule, 4) == pytest.approx(4 * interruptions_per_hour(rule, 1))
        one = spot_economics(rule, nodes=1, checkpoint_gib=50, hours=10)
        four = spot_economics(rule, nodes=4, checkpoint_gib=50, hours=10)
        assert four.overhead_frac > one.overhead_frac
        assert four.checkpoint_interval_hours < one.checkpoint_interval_hours

    def test_bigger_checkpoints_cost_more_overhead(self) -> None:
        """A larger checkpoint takes longer to write and raises the expected overhead."""
        rule = RULES["runpod"]
        small = spot_economics(rule, nodes=1, checkpoint_gib=1, hours=10)
        big = spot_economics(rule, nodes=1, checkpoint_gib=500, hours=10)
        assert big.checkpoint_write_s > small.checkpoint_write_s
        assert big.overhead_frac > small.overhead_frac

    def test_no_preemption_no_overhead(self) -> None:
        """Where spot is never interrupted (rate 0), the overhead is zero."""
        econ = spot_economics(RULES["lambda"], nodes=1, checkpoint_gib=10, hours=5)
        assert econ.overhead_frac == 0
        assert econ.mtbf_hours == math.inf


class TestAwsBands:
    def test_training_gpus_are_interrupted_more_than_small_ones(self) -> None:
        """AWS H100 spot (p5, top band) is interrupted more often than T4 spot (g4dn)."""
        rule = RULES["aws"]
        assert interruptions_per_hour(rule, 1, "H100-SXM-80GB") > interruptions_per_hour(
            rule, 1, "T4"
        )

    def test_unknown_gpu_uses_the_provider_default(self) -> None:
        """A GPU outside the band table falls back to the rule's own rate."""
        rule = RULES["aws"]
        assert interruptions_per_hour(rule, 1, "MI300X") == rule.spot_interruptions_per_hour
