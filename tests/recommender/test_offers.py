"""Offer: the checks its constructor makes, and what it derives from its GPU."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, replace

import pytest

from recommender.gpus import IntraNode
from recommender.pricing.offers import offers_for_key
from tests.factories import offer


class TestOffer:
    @pytest.mark.parametrize("price", [0.0, -1.0, 10_000.0, float("nan"), float("inf")])
    def test_an_implausible_price_is_refused(self, price: float) -> None:
        with pytest.raises(ValueError, match="implausible price"):
            offer(price_usd_per_hour=price)

    def test_at_least_one_gpu(self) -> None:
        with pytest.raises(ValueError, match="at least one GPU"):
            offer(gpu_count=0)

    def test_names_its_provider_and_instance_type(self) -> None:
        with pytest.raises(ValueError, match="names its provider"):
            offer(provider="")

    def test_priced_is_replace(self) -> None:
        """priced() is the shape at another price, kind and place, checked as constructed."""
        shape = offer(ram_gib=2048.0, source="aws")
        built = shape.priced(31.5, True, "us-west-2", "usw2-az1")
        assert built == replace(
            shape, price_usd_per_hour=31.5, spot=True, region="us-west-2", zone="usw2-az1"
        )
        with pytest.raises(ValueError, match="implausible price"):
            shape.priced(0.0, False, "us-east-1", "")

    def test_frozen(self) -> None:
        with pytest.raises(FrozenInstanceError):
            offer().zone = "elsewhere"  # type: ignore[misc]

    def test_link_and_memory_default_to_the_gpu_model(self) -> None:
        plain = offer(gpu_id="L4", gpu_count=1, price_usd_per_hour=0.8)
        assert plain.link is IntraNode.PCIE
        assert plain.memory_gib_per_gpu == pytest.approx(24e9 / 2**30)
        stated = replace(plain, intra_node=IntraNode.NVLINK, gpu_memory_gib=22.0)
        assert (stated.link, stated.memory_gib_per_gpu) == (IntraNode.NVLINK, 22.0)

    def test_price_per_gpu_and_key(self) -> None:
        o = offer(price_usd_per_hour=98.32, spot=True, region="us-east-1", zone="a")
        assert o.price_usd_per_gpu_hour == pytest.approx(98.32 / 8)
        assert o.key == f"{o.provider}/{o.instance_type}/8xH100-SXM-80GB/us-east-1/a/spot"
        assert o.legacy_key == f"{o.provider}/{o.instance_type}/us-east-1/a/spot"

    def test_the_key_names_the_gpus(self) -> None:
        """One GCP N1 host type carries several GPU models and counts: each is its own key."""
        t4 = offer(provider="gcp", instance_type="n1-highmem-8", gpu_id="T4", gpu_count=1)
        keys = {t4.key, replace(t4, gpu_id="P4").key, replace(t4, gpu_count=2).key}
        assert len(keys) == 3
        assert len({t4.legacy_key, replace(t4, gpu_id="P4").legacy_key}) == 1

    def test_offers_for_key_reads_keys_of_earlier_versions(self) -> None:
        """A key names its offer; an old key (no GPUs) names every offer it may have meant."""
        t4 = offer(provider="gcp", instance_type="n1-highmem-8", gpu_id="T4", gpu_count=1)
        p4 = replace(t4, gpu_id="P4")
        aws = offer()
        listed = [aws, t4, p4]
        assert offers_for_key(t4.key, listed) == (t4,)
        assert offers_for_key(aws.legacy_key, listed) == (aws,)
        assert offers_for_key(t4.legacy_key, listed) == (t4, p4)
        assert offers_for_key("aws/gone/us-east-1//od", listed) == ()
