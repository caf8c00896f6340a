"""One cell of `status --all-envs` and of the site's index in words (what it holds is the table record's:
`state.record`)."""

from __future__ import annotations

from collections.abc import Mapping


def cell_summary(cell: Mapping[str, object]) -> str:
    """One cell of the contract × environment matrix (`status --all-envs`, the site's index) in words: the
    stamped version, what is pending and what a gate waits for."""
    if "error" in cell:
        return f"error: {cell['error']}"
    stamped = cell["stamped"] or "not created"
    pending = cell["pending"]
    assert isinstance(pending, list)
    parts = [str(stamped)]
    for item in pending:
        parts.append(f"pending {item['migration']} [{'/'.join(item['phases'])}]")
    waiting = cell["waiting"]
    assert isinstance(waiting, list)
    parts += [f"waiting {w['migration']}: {w['waits_for']}" for w in waiting]
    return "; ".join(parts)
