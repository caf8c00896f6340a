"""A statement the extractor cannot read that names a deprecated column keeps the drop's gate shut.

Through the public pieces the collection uses: `Extractor.answers` (what `collect` runs on the distinct
statements), the readers log and `readers_gate`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from delta_contracts.sql.extract import Catalog
from delta_contracts.telemetry.gate import readers_gate
from delta_contracts.telemetry.log import ReaderRow, Watermark, append_readers, record_watermark
from delta_contracts.telemetry.matching import Targets
from delta_contracts.telemetry.workers import Context, Extractor, Job

NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
NOTES = "logistics.shipments.notes"
CATALOG = Catalog(schemas={"logistics.shipments": ("shipment_id", "notes", "dest")})
TARGETS = Targets.of([NOTES], CATALOG.schemas, {})
# sqlglot raises IndexError on this (a map with an odd argument count); Spark parses it.
UNREADABLE = "SELECT s.notes, map('a' COLLATE UTF8_LCASE, 'b', 'c') FROM logistics.shipments AS s"


def _hits(texts: list[str]) -> list[dict[str, object]]:
    with Extractor(Context(CATALOG, TARGETS, all_columns=False)) as extractor:
        answers = extractor.answers([Job(text) for text in texts])
    return [{"error": a.error, "hits": [{"object": o, "kind": k} for o, k in a.hits]} for a in answers]


def test_an_unreadable_statement_is_an_error_that_names_a_possible_reader() -> None:
    rows = _hits([UNREADABLE, "SELECT shipment_id FROM logistics.shipments"])
    assert rows[0]["error"] and "IndexError" in str(rows[0]["error"])
    assert rows[0]["hits"] == [{"object": NOTES, "kind": "possible"}]
    assert rows[1]["error"] is None and rows[1]["hits"] == []  # the batch went on


def test_it_keeps_the_gate_of_the_deprecated_column_shut(tmp_path: Path) -> None:
    record_watermark(
        tmp_path, Watermark("history", NOW - timedelta(hours=1), NOW, NOW - timedelta(days=60), 1, 1)
    )
    hits = _hits([UNREADABLE])[0]["hits"]
    assert isinstance(hits, list)
    when = NOW - timedelta(days=1)
    readers = [
        ReaderRow(str(h["object"]), str(h["kind"]), "dana", "notebook", "s1", when, "history") for h in hits
    ]
    append_readers(tmp_path, readers, NOW)
    verdict = readers_gate(tmp_path, [NOTES], timedelta(days=14), NOW)
    assert not verdict.open
    assert verdict.readers == {NOTES: ("dana (notebook) [possible]",)}
