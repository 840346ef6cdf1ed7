"""`gpufit feed refresh|status` and the catalog `gpufit ask` answers from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import EXIT_ERROR, EXIT_OK
from tests.bot.cli_helpers import run_cli

DATA = Path(__file__).resolve().parents[1] / "feeds" / "data"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, redis_url: str, tmp_path: Path) -> pytest.MonkeyPatch:
    """A real Redis from the fixture, an empty state dir and no configured feeds."""
    monkeypatch.setenv("REDIS_URL", redis_url)
    monkeypatch.setenv("GPUFIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("GPUFIT_FEEDS", raising=False)
    return monkeypatch


class TestRefresh:
    def test_refresh_then_status_then_ask(self, env: pytest.MonkeyPatch) -> None:
        """Refreshed prices land in Redis, show in status, and answer the next ask."""
        code, text = run_cli("feed", "refresh", f"aws={DATA / 'skypilot_aws.csv'}")
        assert code == EXIT_OK, text
        assert "aws: updated" in text
        code, text = run_cli("feed", "status")
        assert code == EXIT_OK
        assert "aws" in text
        code, text = run_cli("ask", "7B qlora 5 hours", "--json")
        assert code == EXIT_OK
        doc = json.loads(text)
        assert [s["name"] for s in doc["sources"]] == ["aws"]
        assert doc["sources"][0]["bundled"] is False
        assert {o["provider"] for o in doc["options"]} == {"aws"}

    def test_configured_feeds_come_from_the_environment(self, env: pytest.MonkeyPatch) -> None:
        """GPUFIT_FEEDS names the sources `feed refresh` fetches by default."""
        env.setenv("GPUFIT_FEEDS", f"lambda={DATA / 'skypilot_lambda.csv'}")
        code, text = run_cli("feed", "refresh")
        assert code == EXIT_OK, text
        assert "lambda: updated" in text

    def test_a_failing_source_exits_1_and_keeps_the_others(self, env: pytest.MonkeyPatch) -> None:
        """One bad source fails the refresh (exit 1) but the good one is stored."""
        code, text = run_cli(
            "feed", "refresh", f"aws={DATA / 'skypilot_aws.csv'}", "bad=/no/such/file.csv"
        )
        assert code == EXIT_ERROR
        assert "✗ bad" in text
        assert "aws: updated" in text
        _, status = run_cli("feed", "status")
        assert "no such file" in status.lower() or "cannot read" in status.lower()

    def test_no_feeds_configured_is_a_clear_error(
        self, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Refreshing with nothing configured says how to configure a feed."""
        code, _ = run_cli("feed", "refresh")
        assert code == EXIT_ERROR
        assert "GPUFIT_FEEDS" in capsys.readouterr().err


class TestCatalogFlag:
    def test_catalog_flag_reads_the_source_directly(self, env: pytest.MonkeyPatch) -> None:
        """`--catalog SRC` answers from that source only, without the cache."""
        code, text = run_cli(
            "ask", "7B qlora 5 hours", "--json", "--catalog", str(DATA / "feed.json")
        )
        assert code == EXIT_OK
        doc = json.loads(text)
        assert len(doc["sources"]) == 1
        assert doc["sources"][0]["bundled"] is False

    def test_unreadable_catalog_is_exit_1_with_a_hint(
        self, env: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A `--catalog` that cannot be read fails with a hint, not a traceback."""
        code, _ = run_cli("ask", "7B qlora 5 hours", "--catalog", "/no/such/prices.json")
        err = capsys.readouterr().err
        assert code == EXIT_ERROR
        assert "No price source could be read" in err
        assert "Traceback" not in err


class TestFreshInstall:
    def test_fresh_install_answers_from_the_bundled_snapshot(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Without REDIS_URL, feeds or a cache, ask answers offline from the bundled snapshot."""
        monkeypatch.delenv("REDIS_URL", raising=False)
        monkeypatch.delenv("GPUFIT_FEEDS", raising=False)
        monkeypatch.setenv("GPUFIT_STATE_DIR", str(tmp_path / "fresh"))
        code, text = run_cli("ask", "7B qlora 5 hours", "--json")
        assert code == EXIT_OK
        assert json.loads(text)["sources"][0]["bundled"] is True

    def test_embedded_redis_is_used_once_a_refresh_wrote_to_it(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Without REDIS_URL, refresh writes to the embedded Redis and ask reads it back."""
        monkeypatch.delenv("REDIS_URL", raising=False)
        monkeypatch.delenv("GPUFIT_FEEDS", raising=False)
        monkeypatch.setenv("GPUFIT_STATE_DIR", str(tmp_path / "embedded"))
        code, text = run_cli("feed", "refresh", f"aws={DATA / 'skypilot_aws.csv'}")
        assert code == EXIT_OK, text
        from recommender.feeds import redis_conn

        for server in list(redis_conn._EMBEDDED.values()):
            server.shutdown()  # as at process exit: the data file must carry the prices
        redis_conn._EMBEDDED.clear()
        assert (tmp_path / "embedded" / redis_conn.EMBEDDED_DB_FILE).stat().st_size > 0
        code, text = run_cli("ask", "7B qlora 5 hours", "--json")
        assert code == EXIT_OK
        assert [s["name"] for s in json.loads(text)["sources"]] == ["aws"]
