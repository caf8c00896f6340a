"""Engines: where ops meet live Delta tables. Spark, Sail and delta-rs are imported only in this package."""
