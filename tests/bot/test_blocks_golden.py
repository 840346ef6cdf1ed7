"""Golden Block Kit snapshots: what Slack receives for a few representative answers.

Each case renders a fixed :class:`Recommendation` (factory offers, a fixed catalog and
``NOW``) or a fixed help/GPU message and compares it, as JSON, with
``tests/bot/golden/<case>.json``. A change to the wording or layout of a message shows up here
as a diff to review, not as a surprise in a channel.

After an intended change, rewrite the snapshots and review the diff before committing::

    GPUFIT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/bot/test_blocks_golden.py

Only this test module reads ``GPUFIT_UPDATE_GOLDEN``; nothing in ``bot/`` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import pytest

from bot.render.blocks import render_gpus, render_help, render_recommendation
from bot.render.limits import Message, check_limits
from bot.render.short import render_short
from recommender import Catalog, Recommendation, get_gpu, recommend
from recommender.workload import HardwareRequest, Method
from tests.factories import NOW, catalog, offer, workload
from tests.fake_slack import message_problems

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = os.environ.get("GPUFIT_UPDATE_GOLDEN") == "1"


class Render(Protocol):
    """An answer renderer: the detailed one (blocks) or the short one."""

    def __call__(self, rec: Recommendation, *, query: str, ephemeral: bool = True) -> Message: ...


def _catalog() -> Catalog:
    """A small fixed market: H100 nodes (one spot), A100s, a spot RTX 4090."""
    return catalog(
        offer(),
        offer(spot=True, price_usd_per_hour=22.0, region="us-west-2"),
        offer(
            provider="lambda",
            instance_type="gpu_8x_h100_sxm5",
            price_usd_per_hour=23.92,
            fabric_gbps=None,
        ),
        offer(
            provider="gcp",
            instance_type="a2-ultragpu-8g",
            gpu_id="A100-SXM-80GB",
            price_usd_per_hour=40.0,
            region="us-central1",
        ),
        offer(
            provider="runpod",
            instance_type="1x A100 80GB",
            gpu_id="A100-SXM-80GB",
            gpu_count=1,
            price_usd_per_hour=1.89,
            region="US",
        ),
        offer(
            provider="vast",
            instance_type="RTX 4090",
            gpu_id="RTX-4090",
            gpu_count=1,
            price_usd_per_hour=0.4,
            spot=True,
            region="EU",
        ),
    )


def ranked_with_spot_caveats(render: Render = render_recommendation) -> Message:
    rec = recommend(workload(duration_hours=48), _catalog(), now=NOW)
    return render(rec, query="llama-3-8b full finetune 2 days spot ok")


def over_budget_with_alternative(render: Render = render_recommendation) -> Message:
    """A day on the reference node buys ~1.2B tokens: $1,639 in full, $1,574 with LoRA."""
    rec = recommend(
        workload(model="Llama 3 70B", budget_usd=1600, duration_hours=24), _catalog(), now=NOW
    )
    return render(rec, query="llama-3-70b full finetune 1 day under $1,600")


def tight_named_hardware(render: Render = render_recommendation) -> Message:
    """The user fixed one RTX 4090: the plan fits with 1.7 GiB free, under the margin."""
    rec = recommend(
        workload(
            method=Method.LORA,
            seq_len=3072,
            hardware=HardwareRequest(gpu_id="RTX-4090", count=1),
            tokens=2e8,
        ),
        _catalog(),
        now=NOW,
    )
    return render(rec, query="llama-3-8b lora seq 3072 on 1x RTX 4090 on 200M tokens")


def named_hardware_that_does_not_fit(render: Render = render_recommendation) -> Message:
    rec = recommend(
        workload(
            model="Llama 3 70B",
            hardware=HardwareRequest(gpu_id="RTX-4090", count=1),
            duration_hours=24,
        ),
        _catalog(),
        now=NOW,
    )
    # Posted in a thread (not ephemeral): no "Post to channel" button. The echo is plain text.
    return render(rec, query="llama-3-70b full finetune on 1x RTX 4090 <!channel>", ephemeral=False)


def short(case: Callable[[Render], Message]) -> Callable[[], Message]:
    """The same case's short answer (bot/render/short.py), what a question gets first."""
    return lambda: case(render_short)


def gpus() -> Message:
    return render_gpus([get_gpu(g) for g in ("H100-SXM-80GB", "A100-SXM-80GB", "RTX-4090")])


CASES: dict[str, Callable[[], Message]] = {
    "ranked_spot_caveats": ranked_with_spot_caveats,
    "over_budget_alternative": over_budget_with_alternative,
    "named_hardware_no_fit": named_hardware_that_does_not_fit,
    "tight_named_hardware": tight_named_hardware,
    "help": render_help,
    "gpus": gpus,
    "short_ranked_spot_caveats": short(ranked_with_spot_caveats),
    "short_over_budget_alternative": short(over_budget_with_alternative),
    "short_named_hardware_no_fit": short(named_hardware_that_does_not_fit),
    "short_tight_named_hardware": short(tight_named_hardware),
}


def _as_json(message: Message) -> str:
    return json.dumps(message.kwargs(), indent=2, ensure_ascii=False) + "\n"


class TestGoldenMessages:
    @pytest.mark.parametrize("case", sorted(CASES))
    def test_the_message_matches_its_snapshot(self, case: str) -> None:
        """The rendered message is exactly the checked-in JSON (rewritten with
        ``GPUFIT_UPDATE_GOLDEN=1``), and the snapshot itself keeps Slack's limits."""
        message = CASES[case]()
        rendered = _as_json(message)
        path = GOLDEN / f"{case}.json"
        if UPDATE:
            path.write_text(rendered, encoding="utf-8")
        if not path.exists():
            pytest.fail(f"no snapshot {path.name}; create it with GPUFIT_UPDATE_GOLDEN=1")
        assert rendered == path.read_text(encoding="utf-8")
        assert check_limits(message.blocks, message.text) == []
        assert message_problems(message.kwargs()) == []

    def test_every_snapshot_belongs_to_a_case(self) -> None:
        """No stale snapshot lingers after a case is renamed or removed."""
        assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(CASES)

    def test_the_answers_show_what_each_case_is_about(self) -> None:
        """Read as a spec: spot caveats, the budget gap with an alternative, the layout that
        would be needed, and no ping from the echoed question."""
        spot = _as_json(ranked_with_spot_caveats())
        assert "preemptions expected" in spot
        over = _as_json(over_budget_with_alternative())
        assert "Over budget" in over
        assert "Alternative: *LoRA*" in over
        hardware = named_hardware_that_does_not_fit()
        assert "Smallest layouts that would hold it" in _as_json(hardware)
        echo = hardware.blocks[1]["elements"][0]
        assert echo["type"] == "plain_text"
        assert "<!channel>" in echo["text"]
        assert "gpufit_post" not in _as_json(hardware)
        assert "per B tokens" in spot
        assert "(reference)" in spot
        tight = _as_json(tight_named_hardware())
        assert "under the 3.6 GiB safety margin" in tight
        assert "may run out of memory" in tight
