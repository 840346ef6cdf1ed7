"""Pure renderers: domain values in, JSON documents / terminal text / Block Kit out."""
