"""Sanity checks on real catalog rows (recommender/pricing/sanity.py): what is dropped, what is kept
with a caveat, and one region per price."""

from __future__ import annotations

from dataclasses import replace

import pytest

from recommender import providers
from recommender.feeds.detect import parse_any
from recommender.parsing.parse import parse_workload
from recommender.pricing.catalog import Catalog
from recommender.pricing.offers import Offer
from recommender.pricing.sanity import screen
from recommender.ranking.caveats import CaveatKind, Severity
from recommender.ranking.recommend import recommend
from tests.factories import NOW, offer, workload
from tests.feeds.conftest import catalog_bytes, catalog_clouds


def _cloud(cloud: str) -> tuple[Offer, ...]:
    url = f"https://example.test/catalogs/v8/{cloud}/vms.csv"
    return parse_any(catalog_bytes(cloud), source=url, as_of=NOW).offers


def _find(offers: tuple[Offer, ...], instance: str, zone: str, spot: bool) -> Offer:
    (found,) = [o for o in offers if (o.instance_type, o.zone, o.spot) == (instance, zone, spot)]
    return found


class TestRealAwsRows:
    """SkyPilot's AWS catalog rows (tests/feeds/data/catalogs/v8/aws/vms.csv)."""

    def test_spot_at_on_demand_price_is_dropped(self) -> None:
        # The real row: p4d.24xlarge in ap-south-1 lists Price = SpotPrice = 26.3444. The
        # SkyPilot adapter already makes no spot offer of it; a feed with separate spot rows
        # (gpuhunt, native) is caught by screen().
        assert not any(o.spot and o.instance_type == "p4d.24xlarge" for o in _cloud("aws"))
        od = offer(instance_type="p4d.24xlarge", gpu_id="A100-SXM-40GB", region="ap-south-1")
        od = replace(od, price_usd_per_hour=26.3444)
        same = replace(od, spot=True, zone="aps1-az1")
        above = replace(od, spot=True, zone="aps1-az2", price_usd_per_hour=27.0)
        below = replace(od, spot=True, zone="aps1-az3", price_usd_per_hour=12.0)
        screened = screen([od, same, above, below])
        assert [o for o, _ in screened.dropped] == [same, above]
        assert screened.offers == (od, below)
        assert "≥ on-demand" in screened.dropped[0][1]

    def test_deep_discount_in_a_local_zone_is_kept_with_both_caveats(self) -> None:
        screened = screen(_cloud("aws"))
        lz = _find(screened.offers, "p5.48xlarge", "use1-atl2-az1", spot=True)
        kinds = {c.kind for c in screened.caveats[lz.key]}
        assert kinds == {CaveatKind.OUTLIER, CaveatKind.ZONE}
        texts = " ".join(c.text for c in screened.caveats[lz.key])
        assert "81 % below on-demand" in texts
        assert "Local Zone" in texts
        normal = _find(screened.offers, "p5.48xlarge", "use1-az2", spot=True)
        assert normal.key not in screened.caveats

    def test_p_family_on_demand_needs_quota(self) -> None:
        screened = screen(_cloud("aws"))
        od = _find(screened.offers, "p5.48xlarge", "", spot=False)
        assert [c.kind for c in screened.caveats[od.key]] == [CaveatKind.CAPACITY]

    def test_the_local_zone_spot_no_longer_ranks_first(self) -> None:
        """us-east-1 is shown at its cheapest sound zone, not at the Local Zone's doubted
        price (81 % below on-demand, opt-in); no doubted price ranks first."""
        offers = _cloud("aws")
        w = parse_workload("pretrain a 7B model on 20B tokens on H100, spot ok")
        rec = recommend(w, Catalog.of(offers, ()), now=NOW, top=10)
        zones = [o.offer.zone for o in rec.options]
        assert "use1-atl2-az1" not in zones
        assert "use1-az6" in zones
        assert not rec.options[0].doubtful

    def test_a_doubted_price_is_shown_after_every_sound_one(self) -> None:
        """Where a doubted price is the only one of its instance, it is shown with its
        caveats, ranked after the sound prices however cheap it is."""
        sound = offer(price_usd_per_hour=55.0, zone="use1-az2")
        local = offer(instance_type="p5e.48xlarge", price_usd_per_hour=12.0, zone="use1-atl2-az1")
        rec = recommend(workload(), Catalog.of([sound, local], ()), now=NOW, top=5)
        assert [o.offer for o in rec.options] == [sound, local]
        assert rec.options[1].doubtful
        assert CaveatKind.ZONE in {c.kind for c in rec.options[1].caveats}


class TestMedianOutliers:
    def test_far_below_the_median_is_flagged_and_absurd_is_dropped(self) -> None:
        regions = ("us-east-1", "us-west-2", "eu-west-2", "ap-south-1")
        base = [offer(region=r, price_usd_per_hour=55.04) for r in regions]
        cheap = offer(region="ca-central-1", price_usd_per_hour=24.0)
        absurd = offer(region="sa-east-1", price_usd_per_hour=5.5)
        screened = screen([*base, cheap, absurd])
        assert [o for o, _ in screened.dropped] == [absurd]
        (caveat,) = [c for c in screened.caveats[cheap.key] if c.kind is CaveatKind.OUTLIER]
        assert "56 % below the median 55.04" in caveat.text

    def test_a_dropped_row_does_not_price_the_budget_capped_work(self) -> None:
        # The duration-plus-budget cap prices the reference layout at its lowest listed
        # price: a row the screen drops must not be that price (it read every row once).
        regions = ("us-east-1", "us-west-2", "eu-west-2", "ap-south-1")
        base = [offer(region=r, price_usd_per_hour=55.04) for r in regions]
        absurd = offer(region="sa-east-1", price_usd_per_hour=5.5)
        catalog = Catalog.of([*base, absurd], ())
        assert [o for o, _ in catalog.screened.dropped] == [absurd]
        rec = recommend(parse_workload("7B full finetune 1 week budget $500"), catalog, now=NOW)
        work = rec.work
        assert work is not None
        assert work.reference is not None
        assert work.tokens is not None
        assert work.budget_capped
        ref = work.reference
        bought = 500 / (55.04 * ref.plan.nodes) * ref.tokens_per_hour
        assert work.tokens == pytest.approx(bought)
        assert absurd.key not in {o.offer.key for o in rec.options}

    def test_two_places_are_no_median(self) -> None:
        screened = screen(
            [offer(price_usd_per_hour=55.0), offer(region="x", price_usd_per_hour=5.0)]
        )
        assert not screened.dropped


@pytest.mark.parametrize(
    ("zone", "opt_in"),
    [
        ("us-west-2-lax-1a", True),  # Local Zone names (AWS Local Zones user guide)
        ("us-east-1-bos-1a", True),
        ("use1-atl2-az1", True),  # Local Zone ID, as SkyPilot's catalog lists it
        ("usw2-lax1-az1", True),
        ("us-east-1-wl1-bos-wlz-1", True),  # Wavelength Zone name
        ("use1-wl1-bos-wlz1", True),
        ("us-east-1a", False),
        ("use1-az1", False),
        ("us-central1-a", False),
        ("", False),
    ],
)
def test_opt_in_zone_names(zone: str, opt_in: bool) -> None:
    kind = providers.get("aws").opt_in_zone(zone)
    assert (kind is not None) is opt_in
    if opt_in:
        assert kind == ("Wavelength" if "wl1" in zone else "Local")


class TestOneRegionPerPrice:
    def test_lambda_same_price_everywhere_shows_one_region_and_says_so(self) -> None:
        offers = _cloud("lambda")
        w = parse_workload("fine-tune llama 3 8B on 2B tokens on H100")
        rec = recommend(w, Catalog.of(offers, ()), now=NOW, top=10)
        lam = [o for o in rec.options if o.offer.instance_type == "gpu_8x_h100_sxm5"]
        assert len(lam) == 1
        (note,) = [c for c in lam[0].caveats if c.kind is CaveatKind.ZONE]
        assert note.severity is Severity.INFO
        assert note.text.startswith("same price in 2 regions (europe-central-1, us-east-1)")
        assert lam[0].offer.region == "europe-central-1"  # the first by name, every time

    def test_the_user_region_is_kept(self) -> None:
        offers = _cloud("lambda")
        w = parse_workload("fine-tune llama 3 8B on 2B tokens on H100 in us-east")
        rec = recommend(w, Catalog.of(offers, ()), now=NOW, top=10)
        assert rec.options
        assert {o.offer.region for o in rec.options} == {"us-east-1"}

    def test_a_cheaper_region_is_not_collapsed(self) -> None:
        a = offer(provider="lambda", instance_type="gpu_8x_h100_sxm5", price_usd_per_hour=23.92)
        b = replace(a, region="us-west-1", price_usd_per_hour=20.0)
        w = parse_workload("fine-tune llama 3 8B on 2B tokens on H100")
        rec = recommend(w, Catalog.of((a, b), ()), now=NOW, top=5)
        assert [o.offer.region for o in rec.options] == ["us-west-1", "us-east-1"]
        assert not any(c.kind is CaveatKind.ZONE for o in rec.options for c in o.caveats)


class TestSameGpuAcrossTheCatalog:
    """The per-GPU-hour price against the same GPU at every provider of every fixture."""

    @staticmethod
    def _all() -> list[Offer]:
        return [o for cloud in catalog_clouds() for o in _cloud(cloud)]

    def test_placeholders_are_dropped_and_nothing_else(self) -> None:
        """Mithril's 8x A100 80GB and 8x B200 at 0.08 USD/h (0.01 per GPU-hour) are dropped;
        every other real row of every fixture is kept."""
        screened = screen(self._all())
        by_gpu = [(o.provider, o.instance_type) for o, why in screened.dropped if "GPU-h" in why]
        assert by_gpu == [("mithril", "a100-80gb.sxm.8x"), ("mithril", "neb-b200.sxm.8x")]
        reasons = [why for _, why in screened.dropped if "GPU-h" in why]
        assert "under a 25th of the median" in reasons[0]

    def test_cheap_marketplace_prices_are_kept_and_the_cheapest_flagged(self) -> None:
        """Vast's A100 40GB at 0.75 per GPU-hour (under 40 % of the median over providers:
        Vast, Shadeform 1.40, Lambda 1.99, AWS 3.29, Azure 3.40, GCP 3.67) is kept with an
        outlier caveat; Lium's, RunPod's and Hyperbolic's cheap rows are kept."""
        screened = screen(self._all())
        kept = {(o.provider, o.instance_type) for o in screened.offers}
        for provider in ("vast", "runpod", "lium", "hyperbolic", "verda", "spheron"):
            assert any(p == provider for p, _ in kept), provider
        vast = [o for o in screened.offers if o.instance_type == "2x-A100_SXM4-32-65536"]
        [caveat] = screened.caveats[vast[0].key]
        assert caveat.kind is CaveatKind.OUTLIER
        assert "below the on-demand median 2.64 of A100-SXM-40GB across 6 providers" in (
            caveat.text
        )
        lium = next(o for o in screened.offers if o.instance_type == "L40S_2x")
        assert lium.key not in screened.caveats  # 0.38 per GPU-hour: 42 % of the median

    def test_a_gpu_few_providers_list_has_no_median(self) -> None:
        """Two providers are not enough: nothing is judged against them."""
        cheap = offer(provider="a", instance_type="x", gpu_id="B200-180GB", price_usd_per_hour=0.08)
        dear = offer(provider="b", instance_type="y", gpu_id="B200-180GB", price_usd_per_hour=50.0)
        assert screen([cheap, dear]).dropped == ()
        third = offer(provider="c", instance_type="z", gpu_id="B200-180GB", price_usd_per_hour=48.0)
        assert [o for o, _ in screen([cheap, dear, third]).dropped] == [cheap]
