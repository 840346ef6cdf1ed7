"""docker-compose: a bot, a worker and a persistent Redis, configured by a complete .env."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bot.settings import ENV_NAMES, Settings

yaml = pytest.importorskip("yaml", reason="pyyaml (test extra) parses the compose file")

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
SECRET_VARIABLES = {"SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"}


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DEPLOY / "docker-compose.yml").read_text())
    return doc


def _service(name: str) -> dict[str, Any]:
    service: dict[str, Any] = _compose()["services"][name]
    return service


def _env_example() -> dict[str, str]:
    """The assignments of deploy/.env.example, in file order."""
    values: dict[str, str] = {}
    for line in (DEPLOY / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, sep, value = line.partition("=")
            assert sep, f"not an assignment: {line!r}"
            values[name.strip()] = value
    return values


class TestServices:
    def test_there_is_a_bot_a_worker_and_redis(self) -> None:
        """The three runtime parts of a team install, and nothing else."""
        assert set(_compose()["services"]) == {"bot", "worker", "redis"}

    @pytest.mark.parametrize(("service", "command"), [("bot", "serve"), ("worker", "worker")])
    def test_bot_and_worker_run_the_one_image(self, service: str, command: str) -> None:
        """Both build the repository's Dockerfile and differ only in the command."""
        spec = _service(service)
        assert spec["command"] == [command]
        assert spec["build"]["dockerfile"] == "Dockerfile"
        assert (DEPLOY / spec["build"]["context"] / "Dockerfile").is_file()
        assert spec["image"] == _service("bot")["image"]

    @pytest.mark.parametrize("service", ["bot", "worker"])
    def test_bot_and_worker_share_the_compose_redis_and_the_env_file(self, service: str) -> None:
        """Settings come from .env, REDIS_URL points at the redis service, started healthy first."""
        spec = _service(service)
        assert spec["env_file"] == ".env"
        assert re.fullmatch(r"redis://redis:6379/\d+", spec["environment"]["REDIS_URL"])
        assert spec["depends_on"]["redis"]["condition"] == "service_healthy"
        assert spec["restart"] == "unless-stopped"

    @pytest.mark.parametrize("service", ["bot", "worker"])
    def test_bot_and_worker_are_locked_down(self, service: str) -> None:
        """Read-only root fs, no capabilities, no privilege escalation."""
        spec = _service(service)
        assert spec["read_only"] is True
        assert spec["cap_drop"] == ["ALL"]
        assert "no-new-privileges:true" in spec["security_opt"]

    def test_only_the_bot_publishes_a_port(self) -> None:
        """Slack reaches the bot's port 3000; the worker and Redis stay on the compose network."""
        assert any(str(p).endswith(":3000") for p in _service("bot")["ports"])
        assert "ports" not in _service("worker")
        assert "ports" not in _service("redis")

    def test_redis_persists_to_a_named_volume_with_the_append_only_file(self) -> None:
        """appendonly yes plus a named volume on /data, so watches survive a restart."""
        redis = _service("redis")
        command = redis["command"]
        assert command[command.index("--appendonly") + 1] == "yes"
        volume, _, target = redis["volumes"][0].partition(":")
        assert target == "/data"
        assert volume in _compose()["volumes"]
        assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


class TestEnvExample:
    def test_every_setting_is_listed_once(self) -> None:
        """The example names exactly the variables gpufit reads (a new setting must be added)."""
        assert sorted(_env_example()) == sorted(ENV_NAMES.values())

    def test_every_variable_has_a_comment_above_it(self) -> None:
        """Each assignment, or the group it belongs to, is explained by a comment line."""
        lines = (DEPLOY / ".env.example").read_text().splitlines()
        for index, line in enumerate(lines):
            if line and not line.startswith("#"):
                above = [prev for prev in lines[max(0, index - 2) : index] if prev.startswith("#")]
                assert above, f"no comment above {line!r}"

    def test_secrets_are_left_blank(self) -> None:
        """No secret value ships, not even a realistic-looking one."""
        values = _env_example()
        for name in SECRET_VARIABLES:
            assert values[name] == "", name
        text = (DEPLOY / ".env.example").read_text()
        assert not re.search(r"xox[abprse]-[A-Za-z0-9]|xapp-[A-Za-z0-9]", text)

    def test_the_example_values_are_valid_settings(self) -> None:
        """Copying the example unchanged gives a valid configuration (with the defaults)."""
        settings = Settings.from_env(_env_example())
        assert settings.port == 3000
        assert settings.slack_bot_token is None
