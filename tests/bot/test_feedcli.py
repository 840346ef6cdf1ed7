"""`gpufit feed refresh|status` and the catalog `gpufit ask` answers from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import EXIT_ERROR, EXIT_OK
from bot.envnames import sets_any_setting
from tests.bot.cli_helpers import ROOT, run_cli

DATA = Path(__file__).resolve().parents[1] / "feeds" / "data"

#: Where platformdirs puts the user state directory on Linux ($XDG_STATE_HOME/gpufit), so a
#: test can give "no GPUFIT_STATE_DIR" a directory of its own.
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="XDG_STATE_HOME is Linux's")


def _without_settings(environ: dict[str, str], state_home: Path) -> dict[str, str]:
    """``environ`` less every variable the settings could read, the state dir under
    ``state_home``: an install with nothing configured."""
    kept = {k: v for k, v in environ.items() if not sets_any_setting({k: v})}
    return kept | {"XDG_STATE_HOME": str(state_home)}


@pytest.fixture
def nothing_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No gpufit variable at all, and the default state dir in a fresh temporary directory."""
    for name, value in list(os.environ.items()):
        if sets_any_setting({name: value}):
            monkeypatch.delenv(name)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    return monkeypatch


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


@linux_only
class TestNothingConfigured:
    """No variable of gpufit's set at all: `ask` decides without building the settings."""

    def test_ask_answers_from_the_snapshot_without_loading_pydantic(self, tmp_path: Path) -> None:
        """A fresh process answers from the bundled snapshot and never imports pydantic."""
        code = (
            "import io, sys\n"
            "from bot.cli import main\n"
            "out = io.StringIO()\n"
            "code = main(['ask', '7B qlora 5 hours', '--json'], out=out)\n"
            "print(code, out.getvalue().count('\"bundled\": true'), 'pydantic' in sys.modules)"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=_without_settings(dict(os.environ), tmp_path / "xdg"),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["0", "1", "False"]

    def test_embedded_data_in_the_default_state_dir_is_read(
        self, nothing_set: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """A refresh with nothing set writes the embedded Redis in the user state dir, and the
        next `ask` with nothing set answers from it, not from the snapshot."""
        code, text = run_cli("feed", "refresh", f"aws={DATA / 'skypilot_aws.csv'}")
        assert code == EXIT_OK, text
        from recommender.feeds import redis_conn

        for server in list(redis_conn._EMBEDDED.values()):
            server.shutdown()  # as at process exit: the data file must carry the prices
        redis_conn._EMBEDDED.clear()
        assert (tmp_path / "xdg" / "gpufit" / redis_conn.EMBEDDED_DB_FILE).stat().st_size > 0
        code, text = run_cli("ask", "7B qlora 5 hours", "--json")
        assert code == EXIT_OK
        assert [s["name"] for s in json.loads(text)["sources"]] == ["aws"]

    def test_redis_url_alone_is_honoured(
        self, nothing_set: pytest.MonkeyPatch, redis_url: str
    ) -> None:
        """REDIS_URL is a setting too: `ask` reads the prices a refresh stored there."""
        nothing_set.setenv("REDIS_URL", redis_url)
        code, text = run_cli("feed", "refresh", f"lambda={DATA / 'skypilot_lambda.csv'}")
        assert code == EXIT_OK, text
        code, text = run_cli("ask", "7B qlora 5 hours", "--json")
        assert code == EXIT_OK
        assert [s["name"] for s in json.loads(text)["sources"]] == ["lambda"]

    @pytest.mark.parametrize(
        ("variable", "value"),
        [("GPUFIT_PORT", "http"), ("gpufit_top", "0"), ("GPUFIT_FEED_TIMEOUT_S", "-1")],
    )
    def test_a_bad_variable_stops_ask_with_its_name(
        self,
        nothing_set: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
        variable: str,
        value: str,
    ) -> None:
        """Any variable set means the settings are read in full, so a bad one is reported
        (exit 1, naming it) even though `ask` on the snapshot would not need it."""
        nothing_set.setenv(variable, value)
        code, text = run_cli("ask", "7B qlora 5 hours")
        err = capsys.readouterr().err
        assert code == EXIT_ERROR
        assert text == ""
        assert f"Invalid setting {variable.upper()}" in err
        assert "Traceback" not in err
