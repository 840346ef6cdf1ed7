"""gpufit's faces: the CLI, the Slack app, the alert worker and the HTTP server."""
