"""Deprecation telemetry: who still reads deprecated tables and columns, kept as a Delta log."""
