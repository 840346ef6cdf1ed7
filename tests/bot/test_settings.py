"""Settings: read once from the environment, validated, secrets hidden, documented exactly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import AliasChoices, SecretStr

from bot.envnames import ENV_ALIASES, ENV_PREFIX, sets_any_setting
from bot.settings import (
    ENV_NAMES,
    TABLE_END,
    TABLE_START,
    Settings,
    SettingsError,
    settings_table_markdown,
)

ROOT = Path(__file__).resolve().parents[2]

SECRET_ENV = {
    "SLACK_BOT_TOKEN": "xoxb-1111-2222-abcdefghijkl",
    "SLACK_SIGNING_SECRET": "8f742231b10e8888abcd99yyyzzz85a5",
    "SLACK_APP_TOKEN": "xapp-1-A0000-1111-deadbeefcafe",
}


def _settings(**env: str) -> Settings:
    """Settings read from exactly ``env`` (never the process environment)."""
    return Settings.from_env(env)


def _block_between_markers(text: str) -> str | None:
    match = re.search(re.escape(TABLE_START) + r".*?" + re.escape(TABLE_END), text, re.S)
    return match.group(0) + "\n" if match else None


class TestFromEnv:
    def test_an_empty_environment_gives_the_documented_defaults(self) -> None:
        """With nothing set, every field has its default and no secret is configured."""
        settings = _settings()
        assert settings == Settings()
        assert settings.redis_url is None
        assert settings.port == 3000
        assert settings.log_format == "json"
        assert settings.metrics_enabled is True
        assert settings.secret_values() == ()

    def test_values_are_parsed_into_their_types(self) -> None:
        """Numbers, booleans, paths and the comma-separated feed list arrive typed."""
        settings = _settings(
            REDIS_URL="redis://redis:6379/0",
            GPUFIT_STATE_DIR="/var/lib/gpufit",
            GPUFIT_FEEDS=" a.csv, https://example.org/b.json ,,",
            GPUFIT_FEED_TIMEOUT_S="7.5",
            GPUFIT_REFRESH_INTERVAL_S="600",
            GPUFIT_PORT="8080",
            GPUFIT_LOG_LEVEL="debug",
            GPUFIT_LOG_FORMAT="text",
            GPUFIT_METRICS_ENABLED="false",
            GPUFIT_METRICS_PORT="9100",
            GPUFIT_TOP="3",
        )
        assert settings.redis_url == "redis://redis:6379/0"
        assert settings.state_dir == Path("/var/lib/gpufit")
        assert settings.feeds == ("a.csv", "https://example.org/b.json")
        assert settings.feed_timeout_s == 7.5
        assert settings.refresh_interval_s == 600
        assert settings.port == 8080
        assert settings.log_level == "DEBUG"
        assert settings.log_format == "text"
        assert settings.metrics_enabled is False
        assert settings.metrics_port == 9100
        assert settings.top == 3

    def test_an_empty_variable_counts_as_unset(self) -> None:
        """``GPUFIT_PORT=`` (as compose writes an unset variable) falls back to the default."""
        assert _settings(GPUFIT_PORT="", REDIS_URL="").port == 3000

    def test_unknown_variables_are_ignored(self) -> None:
        """Other processes' variables in the environment do not trouble the settings."""
        assert _settings(PATH="/usr/bin", HOME="/root") == Settings()

    @pytest.mark.parametrize(
        ("variable", "value"),
        [
            ("GPUFIT_PORT", "0"),
            ("GPUFIT_PORT", "http"),
            ("GPUFIT_METRICS_PORT", "70000"),
            ("GPUFIT_LOG_LEVEL", "LOUD"),
            ("GPUFIT_LOG_FORMAT", "xml"),
            ("GPUFIT_METRICS_ENABLED", "maybe"),
            ("GPUFIT_REFRESH_INTERVAL_S", "10"),
            ("GPUFIT_FEED_TIMEOUT_S", "-1"),
            ("GPUFIT_TOP", "0"),
        ],
    )
    def test_an_invalid_value_raises_a_settings_error_naming_the_variable(
        self, variable: str, value: str
    ) -> None:
        """The error names the environment variable (not the field) and how to fix it."""
        with pytest.raises(SettingsError) as caught:
            _settings(**{variable: value})
        assert f"Invalid setting {variable}:" in caught.value.message
        assert caught.value.hint is not None
        assert variable in caught.value.hint

    def test_settings_are_frozen(self) -> None:
        """A settings object cannot be changed after it was read."""
        settings = _settings()
        with pytest.raises(ValueError, match="frozen"):
            settings.port = 1

    def test_the_non_gpufit_names_are_read_too(self) -> None:
        """``REDIS_URL`` and ``SLACK_*`` keep the names Redis and Slack users know."""
        settings = _settings(REDIS_URL="redis://r:6379/1", SLACK_API_URL="http://127.0.0.1:9/api/")
        assert settings.redis_url == "redis://r:6379/1"
        assert settings.slack_api_url == "http://127.0.0.1:9/api/"

    def test_the_process_environment_is_the_default_source(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``from_env()`` with no mapping reads os.environ (through pydantic-settings)."""
        monkeypatch.setenv("GPUFIT_TOP", "7")
        monkeypatch.setenv("SLACK_BOT_TOKEN", SECRET_ENV["SLACK_BOT_TOKEN"])
        settings = Settings.from_env()
        assert settings.top == 7
        assert settings.slack_bot_token == SecretStr(SECRET_ENV["SLACK_BOT_TOKEN"])

    def test_the_constructor_alone_reads_no_environment(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``Settings()`` is the defaults: only from_env() reads variables."""
        monkeypatch.setenv("GPUFIT_TOP", "7")
        assert Settings().top == 5


class TestProcessStops:
    @pytest.mark.parametrize(
        "argv",
        [
            ["-c", "import sys; from bot.cli import main; sys.exit(main(['serve']))"],
            ["-m", "bot.health"],
        ],
        ids=["gpufit serve", "health check"],
    )
    def test_a_bad_variable_stops_the_process_with_its_name(self, argv: list[str]) -> None:
        """Exit 1 and one line naming the variable on stderr, never a traceback."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUFIT_", "SLACK_"))}
        env["GPUFIT_PORT"] = "http"
        done = subprocess.run(
            [sys.executable, *argv],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 1
        assert "Invalid setting GPUFIT_PORT" in done.stderr
        assert "Traceback" not in done.stderr


class TestSecrets:
    def test_slack_secrets_are_secret_strings(self) -> None:
        """Tokens and the signing secret are SecretStr: their value must be asked for."""
        settings = _settings(**SECRET_ENV)
        assert isinstance(settings.slack_bot_token, SecretStr)
        assert isinstance(settings.slack_signing_secret, SecretStr)
        assert isinstance(settings.slack_app_token, SecretStr)
        assert settings.slack_bot_token.get_secret_value() == SECRET_ENV["SLACK_BOT_TOKEN"]

    @pytest.mark.parametrize("render", [repr, str, lambda s: s.model_dump_json()])
    def test_no_secret_value_appears_when_settings_are_printed(self, render: object) -> None:
        """repr, str and the JSON dump all show the secrets masked."""
        assert callable(render)
        text = render(_settings(**SECRET_ENV))
        for value in SECRET_ENV.values():
            assert value not in text

    def test_secret_values_lists_slack_secrets_and_the_redis_password(self) -> None:
        """The redaction filter learns every configured secret, incl. a password in REDIS_URL."""
        settings = _settings(**SECRET_ENV, REDIS_URL="rediss://default:s3cr3t-pass@redis:6380/0")
        assert set(settings.secret_values()) == {*SECRET_ENV.values(), "s3cr3t-pass"}


class TestEnvNames:
    def test_every_field_has_exactly_one_environment_variable(self) -> None:
        """ENV_NAMES covers every Settings field, and nothing else."""
        assert set(ENV_NAMES) == set(Settings.model_fields)
        assert len(set(ENV_NAMES.values())) == len(ENV_NAMES)

    def test_variable_names_are_upper_snake_case(self) -> None:
        """Variables are GPUFIT_* or the names Slack and Redis users already know."""
        for env_name in ENV_NAMES.values():
            assert re.fullmatch(r"(GPUFIT|SLACK|REDIS)_[A-Z0-9_]+", env_name), env_name


def _aliases(field_name: str) -> list[str]:
    """The variables a field's ``validation_alias`` names, as the model declares them."""
    alias = Settings.model_fields[field_name].validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    return [] if alias is None else [str(alias)]


def _spellings(field_name: str) -> list[str]:
    """Every name a field might be read under: its aliases as the model declares them,
    ``GPUFIT_<FIELD>`` (pydantic-settings also reads that for an aliased field) and the bare
    field name (which it does not read), each in three cases."""
    names = [*_aliases(field_name), ENV_PREFIX + field_name.upper(), field_name.upper()]
    return [spelling for name in names for spelling in (name, name.lower(), name.title())]


class TestSetsAnySetting:
    """``bot.envnames``: the names the model reads, and whether an environment sets any."""

    def test_the_model_reads_exactly_the_names_of_envnames(self) -> None:
        """Aliased fields read ENV_ALIASES' name, every other field GPUFIT_<FIELD>."""
        assert set(ENV_ALIASES) <= set(Settings.model_fields)
        for field_name in Settings.model_fields:
            expected = ENV_ALIASES.get(field_name, ENV_PREFIX + field_name.upper())
            assert ENV_NAMES[field_name] == expected
            expected_aliases = [ENV_ALIASES[field_name]] if field_name in ENV_ALIASES else []
            assert _aliases(field_name) == expected_aliases

    def test_every_documented_variable_counts_as_a_setting(self) -> None:
        """Each variable of the settings table, in any case, with a value, is a setting."""
        for name in ENV_NAMES.values():
            for spelling in (name, name.lower()):
                assert sets_any_setting({spelling: "1"}), spelling

    @pytest.mark.parametrize(
        "environ",
        [
            {},
            {"PATH": "/usr/bin", "HOME": "/root", "XDG_STATE_HOME": "/tmp/state"},
            {"GPUFIT_PORT": "", "REDIS_URL": "", "SLACK_BOT_TOKEN": ""},
            {"REDIS_HOST": "r", "SLACK_TOKEN": "t", "GPUFIT": "x", "PORT": "1", "TOP": "3"},
        ],
        ids=["empty", "unrelated", "empty values", "near misses"],
    )
    def test_an_environment_without_settings_sets_none(self, environ: dict[str, str]) -> None:
        """Unrelated names, empty values and look-alikes are not settings: the defaults."""
        assert not sets_any_setting(environ)
        assert Settings.from_env(environ) == Settings()

    def test_a_variable_the_settings_read_is_never_missed(self) -> None:
        """For every spelling of every field with a valid, an invalid and an empty value:
        when sets_any_setting says nothing is set, the settings are exactly the defaults
        (so the CLI may skip building them), and no variable error is lost."""
        values = ["", "1", "redis://r:6379/0", "not a value"]
        checked = 0
        for field_name in Settings.model_fields:
            for name in _spellings(field_name):
                for value in values:
                    environ = {name: value}
                    if sets_any_setting(environ):
                        continue
                    assert Settings.from_env(environ) == Settings(), environ
                    checked += 1
        assert checked >= len(Settings.model_fields) * 3  # the bare names and empty values

    def test_the_process_environment_is_the_default(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With no mapping, os.environ is asked (names in any case)."""
        for name in [n for n in os.environ if sets_any_setting({n: os.environ[n]})]:
            monkeypatch.delenv(name)
        assert not sets_any_setting()
        monkeypatch.setenv("gpufit_top", "7")
        assert sets_any_setting()


class TestSettingsTable:
    def test_the_table_has_one_row_per_variable_in_declaration_order(self) -> None:
        """Every variable appears once, in ENV_NAMES order, secrets marked as such."""
        rows = [line for line in settings_table_markdown().splitlines() if line.startswith("| `")]
        names = [row.split("`")[1] for row in rows]
        assert names == list(ENV_NAMES.values())
        secret_rows = {row.split("`")[1] for row in rows if "| yes |" in row}
        assert secret_rows == {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"}

    def test_every_row_carries_a_meaning(self) -> None:
        """No setting is documented by its name alone."""
        for field_name, info in Settings.model_fields.items():
            assert info.description, field_name

    def test_the_table_is_wrapped_in_its_markers(self) -> None:
        """The generated block starts and ends with the markers the docs are checked between."""
        table = settings_table_markdown()
        assert table.startswith(TABLE_START + "\n")
        assert table.endswith(TABLE_END + "\n")

    @pytest.mark.parametrize("document", ["README.md", "docs/operations.md"])
    def test_the_documented_table_is_exactly_the_generated_one(self, document: str) -> None:
        """The table between the markers matches the code, so docs cannot drift from settings."""
        text = (ROOT / document).read_text(encoding="utf-8")
        found = _block_between_markers(text)
        assert found is not None, f"{document} has no {TABLE_START} … {TABLE_END} block"
        assert found == settings_table_markdown(), (
            f"{document}'s settings table is stale; paste bot.settings.settings_table_markdown()"
        )
