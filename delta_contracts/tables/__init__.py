"""Stages on one live table beside apply: creating it from its contract (create), adopting an
existing one (adopt) and comparing it with its contract (drift)."""
