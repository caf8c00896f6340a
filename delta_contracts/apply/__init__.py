"""`apply`: run the planned migrations on live tables, with a ledger, resumable batches, one runner per table
and sunset gates (DESIGN.md, "Ledger, locks, gates").

    from delta_contracts.apply import apply
    result = apply(LocalEngine("warehouse"), "migrations", tables=["sales.orders"])
    result.exit_code  # 0 done or waiting at gates, 1 an op failed, 2 refused, 3 another runner holds it

The calls live in `api` (apply, break_lease, engine_for), `discard` (rehash, discard) and `runner` (one
table's run); this package only names them.
"""

from delta_contracts.apply.api import (
    EXIT_DONE,
    EXIT_FAILED,
    EXIT_HELD,
    EXIT_INPUT,
    ApplyResult,
    apply,
    break_lease,
    engine_for,
    project_of_migrations,
)
from delta_contracts.apply.discard import Discarded, DiscardRefusedError, discard, rehash, unserved_tables

__all__ = [
    "EXIT_DONE",
    "EXIT_FAILED",
    "EXIT_HELD",
    "EXIT_INPUT",
    "ApplyResult",
    "DiscardRefusedError",
    "Discarded",
    "apply",
    "break_lease",
    "discard",
    "engine_for",
    "project_of_migrations",
    "rehash",
    "unserved_tables",
]
