"""Data against its contract: validate tables at rest, enforce on write, tagged writes, pinned reads."""
