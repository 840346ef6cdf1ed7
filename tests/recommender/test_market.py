"""`prices`' domain: several GPU names in one request, and prices flagged against the same GPU
on the other clouds and against their own on-demand price."""

from __future__ import annotations

import pytest

from recommender import Offer, UnknownGpuError, WorkloadError, gpu_prices, split_gpus
from recommender.pricing.market import HIGH_FRAC, MAX_GPUS
from recommender.pricing.sanity import GPU_OUTLIER_FRAC
from tests.factories import offer


class TestSplitGpus:
    @pytest.mark.parametrize(
        ("words", "ids"),
        [
            (["H100", "L4"], ("H100-SXM-80GB", "L4")),
            (["H100 L4"], ("H100-SXM-80GB", "L4")),  # Slack hands over one string
            (["H100", "PCIe", "A10G"], ("H100-PCIE-80GB", "A10G")),  # the longest name wins
            (["A100-80GB,", "L4", "and", "RTX", "5090"], ("A100-SXM-80GB", "L4", "RTX-5090")),
            (["h100", "H100-SXM"], ("H100-SXM-80GB",)),  # named twice, listed once
        ],
    )
    def test_names(self, words: list[str], ids: tuple[str, ...]) -> None:
        assert split_gpus(words) == ids

    def test_an_unknown_word_names_itself_with_suggestions(self) -> None:
        with pytest.raises(UnknownGpuError) as caught:
            split_gpus(["H100", "H1000"])
        assert "H1000" in caught.value.user_text()

    def test_nothing_named(self) -> None:
        with pytest.raises(WorkloadError, match="Which GPU"):
            split_gpus([" ", "and"])

    def test_too_many(self) -> None:
        names = ["H100", "L4", "A10G", "L40S", "T4", "B200", "H200"]
        assert len(names) > MAX_GPUS
        with pytest.raises(WorkloadError, match=f"at most {MAX_GPUS}"):
            split_gpus(names)


def _l4(
    provider: str, price: float, *, spot: bool = False, region: str = "r1", **kw: object
) -> Offer:
    return offer(
        provider=provider,
        instance_type=f"{provider}-l4",
        gpu_id="L4",
        gpu_count=1,
        price_usd_per_hour=price,
        spot=spot,
        region=region,
        **kw,
    )


class TestFlags:
    def test_a_price_far_under_the_other_clouds_median_is_flagged(self) -> None:
        """Each other cloud's own median counts once: b's three rows do not outvote c."""
        offers = [
            _l4("a", 0.10),
            _l4("b", 0.80),
            _l4("b", 0.80, region="r2"),
            _l4("b", 0.80, region="r3"),
            _l4("c", 0.70),
        ]
        rows = {r.offer.provider: r for r in gpu_prices("L4", offers).rows}
        median = 0.75  # of b's 0.80 and c's 0.70
        assert GPU_OUTLIER_FRAC * median > 0.10
        assert rows["a"].flags == ("87 % under the on-demand median 0.75 on 2 other clouds",)
        assert rows["c"].flags == ()

    def test_a_price_many_times_the_median_is_flagged(self) -> None:
        offers = [_l4("a", 0.80), _l4("b", 0.70), _l4("c", 3.00)]
        rows = {r.offer.provider: r for r in gpu_prices("L4", offers).rows}
        assert HIGH_FRAC * 0.75 < 3.00
        assert rows["c"].flags == ("4.0x the on-demand median 0.75 on 2 other clouds",)

    def test_one_other_cloud_is_no_market(self) -> None:
        rows = gpu_prices("L4", [_l4("a", 0.10), _l4("b", 0.80)]).rows
        assert all(r.flags == () for r in rows)

    def test_spot_far_under_its_own_on_demand_is_flagged(self) -> None:
        """The real AWS g6.xlarge rows in eu-south-2 (SkyPilot catalog v8): on demand 0.848,
        spot 0.0913 in eus2-az3."""
        offers = [
            _l4("aws", 0.848, region="eu-south-2"),
            _l4("aws", 0.0913, spot=True, region="eu-south-2", zone="eus2-az3"),
        ]
        rows = gpu_prices("L4", offers).rows
        assert rows[0].offer.spot
        assert rows[0].flags == ("spot 89 % under its on-demand",)
        assert rows[1].flags == ()


class TestListing:
    def test_cheapest_per_gpu_hour_one_row_per_instance_region_and_market(self) -> None:
        offers = [
            _l4("a", 0.50, spot=True, zone="z1"),
            _l4("a", 0.40, spot=True, zone="z2"),
            _l4("a", 0.90),
            offer(),  # an H100: not listed
            _l4("b", 0.60),
        ]
        listed = gpu_prices("L4", offers, limit=10)
        assert [(r.offer.provider, r.offer.price_usd_per_hour) for r in listed.rows] == [
            ("a", 0.40),
            ("b", 0.60),
            ("a", 0.90),
        ]
        assert (listed.listed, listed.clouds) == (4, 2)
        assert len(gpu_prices("L4", offers, limit=1).rows) == 1

    def test_no_offer(self) -> None:
        listed = gpu_prices("L4", [offer()])
        assert (listed.rows, listed.listed, listed.clouds) == ((), 0, 0)
