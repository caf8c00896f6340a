"""Engines: where ops meet live Delta tables. Spark, Sail and delta-rs are imported only in this package."""

# Seconds a statement that lost a commit race to a concurrent writer is run again for (`engine.retry`). Here,
# where importing it costs nothing, for the CLI's `--help`.
DEFAULT_CONFLICT_PATIENCE = 300.0
