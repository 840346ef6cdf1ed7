"""The composition root of the Slack face: settings and services in, a Bolt app out.

Nothing is created at import time; ``gpufit serve`` and the tests call :func:`build_app`.
"""

from __future__ import annotations

import logging
import secrets

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.identity import NOT_READY_TEXT, SlackIdentity
from bot.listeners import register
from bot.listeners.errors import handle_error
from bot.middleware import bind_log_context, mark_verified
from bot.services import Services
from bot.settings import Settings, SettingsError

__all__ = ["build_app"]


def build_app(
    settings: Settings, services: Services, *, identity: SlackIdentity | None = None
) -> AsyncApp:
    """The Bolt app with gpufit's middleware, listeners and error handler.

    Requests are authorized by ``identity`` (one ``auth.test`` for the process, shared by
    concurrent first requests; see :mod:`bot.identity`); by default a new one.

    Without ``SLACK_SIGNING_SECRET`` (Socket Mode needs none) the app gets a random secret no
    one knows, so an HTTP request can never pass verification: it fails closed.

    Raises:
        SettingsError: ``SLACK_BOT_TOKEN`` is not set.
    """
    if services.client.token is None:
        raise SettingsError(
            "SLACK_BOT_TOKEN is not set.",
            hint="Set SLACK_BOT_TOKEN to the app's Bot User OAuth Token (xoxb-...).",
        )
    secret = settings.slack_signing_secret
    identity = identity or SlackIdentity(services.client)
    base = services.client
    app = AsyncApp(
        name="gpufit",
        # Bolt builds each request's client from this one's settings, with the token the
        # authorize function returns; this one carries none (Bolt would warn it is ignored).
        client=AsyncWebClient(
            base_url=base.base_url,
            timeout=base.timeout,
            retry_handlers=list(base.retry_handlers),
            logger=base.logger,
        ),
        # None means "not authorized" to Bolt's AsyncCallableAuthorize; its hint omits it.
        authorize=identity.authorizer(),  # type: ignore[arg-type]
        user_facing_authorize_error_message=NOT_READY_TEXT,
        signing_secret=secret.get_secret_value() if secret else secrets.token_hex(32),
        logger=logging.getLogger("gpufit.slack"),
        # The ack function's return is the response, with no 10 ms ack poll (slack.md §2.2,
        # §5); the work after it runs in lazy listeners (bot.listeners.register).
        process_before_response=True,
    )
    app.use(mark_verified())  # first: the error handler answers only marked requests
    app.use(bind_log_context())
    app.error(handle_error)
    register(app, services, top=settings.top)
    return app
