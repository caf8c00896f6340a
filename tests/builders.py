"""Small builders for contract texts and files used across the tests."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

MINIMAL = dedent(
    """\
    apiVersion: delta-contracts/v1
    id: sales.orders
    version: 1.0.0
    owner: {team: commerce}
    columns:
      - name: order_id
        type: bigint
        nullable: false
      - name: amount
        type: decimal(12,2)
        checks: {min: 0}
    """
)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dedent(text), encoding="utf-8")
    return path
