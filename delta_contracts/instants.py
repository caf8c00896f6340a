"""Instants as epoch microseconds: how the toolkit passes a point in time through Spark SQL
(`timestamp_micros` / `unix_micros`), so that neither the session's time zone nor the Python process's can
shift it, on classic Spark and over Spark Connect alike. Exact integer arithmetic, no float rounding."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def epoch_micros(value: datetime) -> int:
    """Microseconds since the epoch; a naive datetime is taken as UTC."""
    since = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)) - EPOCH
    return (since.days * 86_400 + since.seconds) * 1_000_000 + since.microseconds


def from_epoch_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)
