"""``python -m bot`` runs the gpufit CLI."""

from bot.cli import run

run()
