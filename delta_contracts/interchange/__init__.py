"""Contracts in other formats: ODCS v3."""
