"""JSON for what the alert store keeps in Redis (watches, their state, queued alerts)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.alerts.evaluate import WatchState
from bot.alerts.model import OfferQuery, PriceBasis, Threshold, Watch, WatchSpec

__all__ = ["AlertRecord", "dump_state", "dump_watch", "load_state", "load_watch"]


def dump_watch(w: Watch) -> str:
    spec = w.spec
    q = spec.query
    doc: dict[str, Any] = {
        "id": w.id,
        "team_id": w.team_id,
        "channel_id": w.channel_id,
        "created_by": w.created_by,
        "created_at": w.created_at.isoformat(),
        "text": w.text,
        "disabled_reason": w.disabled_reason,
        "threshold_usd": spec.threshold.usd,
        "basis": spec.threshold.basis.value,
        "workload_text": spec.workload_text,
        "daily_digest": spec.daily_digest,
        "assumed": list(spec.assumed),
        "query": None
        if q is None
        else {
            "gpu_id": q.gpu_id,
            "gpu_count": q.gpu_count,
            "providers": sorted(q.providers),
            "regions": list(q.regions),
            "spot": q.spot,
            "place": q.place,
        },
    }
    return json.dumps(doc, sort_keys=True)


def load_watch(raw: str | bytes) -> Watch:
    doc = json.loads(raw)
    q = doc["query"]
    spec = WatchSpec(
        threshold=Threshold(float(doc["threshold_usd"]), PriceBasis(doc["basis"])),
        query=None
        if q is None
        else OfferQuery(
            gpu_id=q["gpu_id"],
            gpu_count=q["gpu_count"],
            providers=frozenset(q["providers"]),
            regions=tuple(q["regions"]),
            spot=q["spot"],
            place=q["place"],
        ),
        workload_text=doc["workload_text"],
        daily_digest=bool(doc["daily_digest"]),
        assumed=tuple(doc["assumed"]),
    )
    return Watch(
        id=doc["id"],
        team_id=doc["team_id"],
        channel_id=doc["channel_id"],
        created_by=doc["created_by"],
        created_at=datetime.fromisoformat(doc["created_at"]),
        spec=spec,
        text=doc["text"],
        disabled_reason=doc["disabled_reason"],
    )


def dump_state(s: WatchState) -> str:
    return json.dumps(
        {
            "armed": s.armed,
            "alerts": s.alerts,
            "last_price_usd": s.last_price_usd,
            "alerted_price_usd": s.alerted_price_usd,
        }
    )


def load_state(raw: str | bytes | None) -> WatchState:
    if raw is None:
        return WatchState()
    doc = json.loads(raw)
    return WatchState(
        armed=bool(doc["armed"]),
        alerts=int(doc["alerts"]),
        last_price_usd=doc["last_price_usd"],
        alerted_price_usd=doc["alerted_price_usd"],
    )


@dataclass(frozen=True, slots=True)
class AlertRecord:
    """One message claimed for delivery: rendered once, posted once."""

    key: str
    watch_ids: tuple[str, ...]
    team_id: str
    channel_id: str
    kind: str  # "crossed", "deeper" or "digest"
    text: str
    blocks: tuple[dict[str, Any], ...] = ()
    status: str = "pending"  # pending → sent | failed | dropped
    attempts: int = 0
    error: str | None = None
    ts: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: When a post of this alert was first sent without its outcome being known yet (epoch
    #: s); from then on it may be in the channel, so a retry looks there before posting.
    posting_since: float | None = None

    def dump(self) -> str:
        return json.dumps(
            {
                "key": self.key,
                "watch_ids": list(self.watch_ids),
                "team_id": self.team_id,
                "channel_id": self.channel_id,
                "kind": self.kind,
                "text": self.text,
                "blocks": list(self.blocks),
                "status": self.status,
                "attempts": self.attempts,
                "error": self.error,
                "ts": self.ts,
                "extra": self.extra,
                "posting_since": self.posting_since,
            },
            sort_keys=True,
        )

    @classmethod
    def load(cls, raw: str | bytes) -> AlertRecord:
        d = json.loads(raw)
        return cls(
            key=d["key"],
            watch_ids=tuple(d["watch_ids"]),
            team_id=d["team_id"],
            channel_id=d["channel_id"],
            kind=d["kind"],
            text=d["text"],
            blocks=tuple(d["blocks"]),
            status=d["status"],
            attempts=int(d["attempts"]),
            error=d["error"],
            ts=d["ts"],
            extra=dict(d["extra"]),
            posting_since=d.get("posting_since"),  # absent from records of earlier versions
        )
