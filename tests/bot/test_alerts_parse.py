"""Watch text → WatchSpec, and the watches that are refused because they could never fire."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.alerts import (
    ImpossibleWatchError,
    PriceBasis,
    WatchError,
    WatchSyntaxError,
    check_watch,
    parse_watch,
)
from recommender import Fabric, GpufitError, UnknownGpuError, WorkloadError
from tests.factories import NOW, catalog, offer

H100 = "H100-SXM-80GB"
A100_80 = "A100-SXM-80GB"

CATALOG = catalog(
    offer(),  # aws 8×H100 on-demand $55/h, EFA
    offer(provider="lambda", instance_type="gpu_1x_h100_sxm5", gpu_count=1, price_usd_per_hour=3.0,
          fabric=Fabric.NONE),
    offer(spot=True, price_usd_per_hour=25.0),
    offer(provider="aws", instance_type="p4de.24xlarge", gpu_id=A100_80, price_usd_per_hour=40.0),
    offer(provider="gcp", instance_type="a2-ultragpu-1g", gpu_id=A100_80, gpu_count=1,
          price_usd_per_hour=5.0, region="us-central1", fabric=Fabric.NONE),
)  # fmt: skip


class TestOfferForm:
    @pytest.mark.parametrize(
        ("text", "gpu", "count", "spot", "providers", "usd", "basis"),
        [
            ("watch 8xH100 below $20/h", H100, 8, None, set(), 20.0, PriceBasis.INSTANCE_HOUR),
            ("8x H100 below $20/hr", H100, 8, None, set(), 20.0, PriceBasis.INSTANCE_HOUR),
            ("8 x H100 under 20 usd per hour", H100, 8, None, set(), 20.0,
             PriceBasis.INSTANCE_HOUR),
            ("8×H100 below $20 an hour", H100, 8, None, set(), 20.0, PriceBasis.INSTANCE_HOUR),
            ("H100 x8 below $20/h", H100, 8, None, set(), 20.0, PriceBasis.INSTANCE_HOUR),
            ("watch H100 spot under $2/gpu-hour", H100, None, True, set(), 2.0,
             PriceBasis.GPU_HOUR),
            ("H100 spot under $2/gpu-h", H100, None, True, set(), 2.0, PriceBasis.GPU_HOUR),
            ("H100 on-demand under $2.50 per gpu hour", H100, None, False, set(), 2.5,
             PriceBasis.GPU_HOUR),
            ("H100 on demand under $2/gpu/h", H100, None, False, set(), 2.0, PriceBasis.GPU_HOUR),
            ("watch a100-80gb on aws below $30/h", A100_80, None, None, {"aws"}, 30.0,
             PriceBasis.INSTANCE_HOUR),
            ("A100 80GB on amazon below $30/h", A100_80, None, None, {"aws"}, 30.0,
             PriceBasis.INSTANCE_HOUR),
            ("16x H100 on aws below $4k/h", H100, 16, None, {"aws"}, 4000.0,
             PriceBasis.INSTANCE_HOUR),
            ("WATCH 8XH100 BELOW $1,250.50/H", H100, 8, None, set(), 1250.5,
             PriceBasis.INSTANCE_HOUR),
        ],
    )  # fmt: skip
    def test_table(
        self,
        text: str,
        gpu: str,
        count: int | None,
        spot: bool | None,
        providers: set[str],
        usd: float,
        basis: PriceBasis,
    ) -> None:
        """Each spelling of an offer watch reads as the GPU, count, kind, place and threshold."""
        spec = parse_watch(text)
        assert spec.query is not None
        assert spec.workload_text is None
        assert (spec.query.gpu_id, spec.query.gpu_count, spec.query.spot) == (gpu, count, spot)
        assert set(spec.query.providers) == providers
        assert (spec.threshold.usd, spec.threshold.basis) == (usd, basis)

    def test_region_words_mean_what_they_mean_in_answers(self) -> None:
        """`in europe` covers every provider's spelling of Europe, as `/gpufit ask` does."""
        spec = parse_watch("watch 8xH100 on gcp in europe below $30/h")
        assert spec.query is not None
        assert "europe" in spec.query.regions
        assert spec.query.providers == frozenset({"gcp"})
        assert spec.query.place == "on gcp in europe"

    def test_no_unit_means_per_instance_hour_and_says_so(self) -> None:
        """Without a unit an offer watch prices the instance per hour and says it assumed so."""
        spec = parse_watch("watch 8xH100 below $20")
        assert spec.threshold.basis is PriceBasis.INSTANCE_HOUR
        assert any("per hour" in a for a in spec.assumed)

    def test_daily_flag(self) -> None:
        """A trailing `daily` asks for the daily digest."""
        assert parse_watch("watch 8xH100 below $20/h daily").daily_digest
        assert parse_watch("watch 8xH100 below $20/h with daily digest").daily_digest
        assert not parse_watch("watch 8xH100 below $20/h").daily_digest


class TestWorkloadForm:
    def test_workload_with_run_budget(self) -> None:
        """A workload before the threshold is read by parse_workload; the amount is its budget."""
        spec = parse_watch("watch 13B full finetune 2 days under $4000")
        assert spec.query is None
        assert spec.workload_text == "13B full finetune 2 days"
        assert (spec.threshold.usd, spec.threshold.basis) == (4000.0, PriceBasis.RUN)

    def test_workload_with_hourly_price_is_refused(self) -> None:
        """A per-hour threshold on a workload is refused with an example of a run budget."""
        with pytest.raises(WatchSyntaxError, match="whole run") as info:
            parse_watch("watch 13B full finetune 2 days under $40/h")
        assert info.value.hint is not None
        assert "under $4000" in info.value.hint

    def test_budget_said_twice_is_refused(self) -> None:
        """A budget inside the workload text and a threshold are one too many."""
        with pytest.raises(WatchSyntaxError, match="budget once"):
            parse_watch("watch 13B full finetune 2 days under $3000 under $4000")

    def test_unreadable_workload_is_a_workload_error(self) -> None:
        """Text that is neither a GPU nor a workload gets the workload parser's message."""
        with pytest.raises(WorkloadError):
            parse_watch("watch something nice under $4000")


class TestSyntaxErrors:
    @pytest.mark.parametrize(
        ("text", "error", "match"),
        [
            ("watch 8xH100", WatchSyntaxError, "price to watch"),
            ("watch 8xH100 below cheap", WatchSyntaxError, "price to watch"),
            ("watch H900 below $2/h", UnknownGpuError, "H900"),
            ("watch 8xH900 below $20/h", UnknownGpuError, "H900"),
            ("watch 8xH100 below $0/h", ImpossibleWatchError, "never be reached"),
            ("watch 8xH100 below $0.00/h", ImpossibleWatchError, "never be reached"),
            ("watch 8xH100 below $0.004/h", ImpossibleWatchError, "never be reached"),
            ("watch 8xH100 below $" + "9" * 400 + "/h", ImpossibleWatchError, "too high"),
            ("watch 8xH100 below $" + "9" * 400 + "k/h", ImpossibleWatchError, "too high"),
            ("watch 13B lora 1 day under $" + "9" * 320, ImpossibleWatchError, "too high"),
            ("watch 0xH100 below $20/h", ImpossibleWatchError, "outside"),
            ("watch 9000xH100 below $20/h", ImpossibleWatchError, "outside"),
            ("watch H100 on mars below $3/h", WatchSyntaxError, "mars"),
            ("watch H100 spot on-demand under $2/h", WatchSyntaxError, "spot or on-demand"),
            ("watch nonsense words below $3/h", WatchSyntaxError, "needs a GPU"),
            ("watch " + "8xH100 " * 100 + "below $3/h", WatchSyntaxError, "too long"),
        ],
    )
    def test_table(self, text: str, error: type[GpufitError], match: str) -> None:
        """Input that cannot be a watch gets a clear message with a hint, never a traceback."""
        with pytest.raises(error, match=match) as info:
            parse_watch(text)
        assert info.value.hint

    @given(st.text(max_size=80))
    def test_total(self, text: str) -> None:
        """Any text either parses or raises a GpufitError (never anything else)."""
        with contextlib.suppress(GpufitError):
            parse_watch(text)


class TestNeverMatches:
    def _check(self, text: str) -> None:
        check_watch(parse_watch(text), CATALOG, now=NOW)

    def test_count_no_shape_makes(self) -> None:
        """3×H100 is refused: instances come with 1 or 8, and clusters in whole 8-GPU nodes."""
        with pytest.raises(ImpossibleWatchError, match="No offer shape makes 3") as info:
            self._check("watch 3xH100 below $20/h")
        assert "1, 8" in info.value.message

    def test_multi_node_count_over_a_fast_fabric_is_fine(self) -> None:
        """16×H100 is two 8-GPU EFA nodes: accepted, priced as the cluster."""
        point = check_watch(parse_watch("watch 16xH100 below $200/h"), CATALOG, now=NOW)
        assert point is not None
        assert point.nodes == 2
        assert point.price_usd == pytest.approx(50.0)  # two spot nodes at $25/h

    def test_multi_node_needs_a_fast_fabric(self) -> None:
        """2×A100-80GB from single-GPU nodes without a fast fabric is refused."""
        with pytest.raises(ImpossibleWatchError, match="No offer shape"):
            self._check("watch 2x a100-80gb on gcp below $20/h")

    def test_gpu_no_feed_lists(self) -> None:
        """A known GPU that no feed lists could never fire."""
        with pytest.raises(ImpossibleWatchError, match="No price feed lists") as info:
            self._check("watch L4 below $1/h")
        assert info.value.hint is not None
        assert H100 in info.value.hint

    def test_provider_no_feed_covers(self) -> None:
        """A provider the feeds do not cover could never fire."""
        with pytest.raises(ImpossibleWatchError, match="No price feed covers azure"):
            self._check("watch 8xH100 on azure below $20/h")

    def test_provider_without_that_gpu(self) -> None:
        """A provider that does not offer that GPU could never fire."""
        with pytest.raises(ImpossibleWatchError, match="gcp does not offer"):
            self._check("watch 8xH100 on gcp below $20/h")

    def test_workload_that_fits_no_gpu(self) -> None:
        """A workload too big for any GPU at any count is refused."""
        with pytest.raises(ImpossibleWatchError, match="any GPU gpufit knows"):
            self._check("watch 9T pretraining seq 1048576 micro-batch 64 2 days under $5000")

    def test_workload_that_fits_not_on_its_named_hardware(self) -> None:
        """A workload pinned to hardware it cannot fit on is refused, naming that hardware."""
        with pytest.raises(ImpossibleWatchError, match="the hardware it names"):
            self._check("watch 70B full finetune 2 days on 1x L4 under $5000")

    def test_possible_watch_returns_current_price(self) -> None:
        """An accepted watch comes back with its current price (the cheapest match)."""
        point = check_watch(parse_watch("watch H100 under $5/gpu-hour"), CATALOG, now=NOW)
        assert point is not None
        assert point.price_usd == pytest.approx(3.0)
        assert point.offer.provider == "lambda"

    def test_errors_are_watch_errors_or_workload_errors(self) -> None:
        """Every refusal is a GpufitError subclass the Slack face turns into text."""
        assert issubclass(ImpossibleWatchError, WatchError)
        assert issubclass(WatchError, GpufitError)
