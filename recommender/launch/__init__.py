"""Launch: the files that run a chosen plan (a SkyPilot task, a framework config, a README)."""
