"""The Slack app manifest matches what the code registers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bot.listeners import EVENTS
from bot.listeners.commands import COMMAND
from bot.server import EVENTS_PATH

ROOT = Path(__file__).resolve().parents[2]


def _manifest() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "deploy/slack/manifest.yaml").read_text())
    return data


class TestManifest:
    def test_the_command_is_declared_with_a_usage_hint(self) -> None:
        """The one slash command the app handles is in the manifest, with a usage hint."""
        [command] = _manifest()["features"]["slash_commands"]
        assert command["command"] == COMMAND
        assert command["usage_hint"]
        assert command["url"].endswith(EVENTS_PATH)

    def test_events_match_the_registered_listeners(self) -> None:
        """The manifest subscribes to exactly the events the app listens to."""
        assert tuple(_manifest()["settings"]["event_subscriptions"]["bot_events"]) == EVENTS

    def test_scopes_interactivity_and_socket_mode_are_set(self) -> None:
        """The bot scopes the features need, interactivity on, the socket-mode switch present."""
        manifest = _manifest()
        scopes = set(manifest["oauth_config"]["scopes"]["bot"])
        assert scopes == {
            "commands",
            "chat:write",
            "chat:write.public",
            "app_mentions:read",
            # The worker reads a channel's newest messages to find an alert whose post's
            # answer was lost (docs/alerts.md), instead of posting it twice.
            "channels:history",
            "groups:history",
            # users.info: the asker's time zone, for deadlines such as "by Friday".
            "users:read",
        }
        assert manifest["settings"]["interactivity"]["is_enabled"] is True
        assert manifest["settings"]["interactivity"]["request_url"].endswith(EVENTS_PATH)
        assert manifest["settings"]["socket_mode_enabled"] in (True, False)
        assert len(manifest["display_information"]["name"]) <= 35
