"""Views created earlier in the same history are read through, in statement-time order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from delta_contracts.sql.extract import Catalog, extract
from delta_contracts.sql.history import ViewHistory, extract_history

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
CREATE = (
    "CREATE VIEW revenue0 AS SELECT l_suppkey, sum(l_extendedprice) AS total FROM tpch.lineitem GROUP BY 1"
)
READ = "SELECT s_suppkey FROM tpch.supplier JOIN revenue0 ON s_suppkey = l_suppkey"


def test_a_view_created_earlier_is_read_through() -> None:
    got = extract_history([(T0, CREATE), (T0 + timedelta(minutes=5), READ)])
    assert got[0].tables_written == ("revenue0",)
    assert got[1].tables_read == ("revenue0", "tpch.lineitem", "tpch.supplier")


def test_statement_time_decides_not_the_order_given() -> None:
    """The history arrives unordered: the read at 10:05 sees the view created at 10:00, the read at 09:55
    does not (the name then was no view this history knew)."""
    got = extract_history(
        [(T0 + timedelta(minutes=5), READ), (T0, CREATE), (T0 - timedelta(minutes=5), READ)]
    )
    assert "tpch.lineitem" in got[0].tables_read
    assert got[2].tables_read == ("revenue0", "tpch.supplier")


def test_a_replaced_or_dropped_view_reads_what_it_read_then() -> None:
    replace = "CREATE OR REPLACE VIEW revenue0 AS SELECT ps_suppkey AS l_suppkey FROM tpch.partsupp"
    drop = "DROP VIEW revenue0"
    got = extract_history(
        [
            (T0, CREATE),
            (T0 + timedelta(hours=1), READ),
            (T0 + timedelta(hours=2), replace),
            (T0 + timedelta(hours=3), READ),
            (T0 + timedelta(hours=4), drop),
            (T0 + timedelta(hours=5), READ),
        ]
    )
    assert got[1].tables_read == ("revenue0", "tpch.lineitem", "tpch.supplier")
    assert got[3].tables_read == ("revenue0", "tpch.partsupp", "tpch.supplier")
    assert got[4].tables_written == ("revenue0",) and got[4].tables_read == ()
    assert got[5].tables_read == ("revenue0", "tpch.supplier")


def test_expand_adds_a_history_view_reads_to_extracted_reads() -> None:
    """The two-pass use: extract each distinct text without history, then expand the reads."""
    history = ViewHistory()
    history.record(T0, extract(CREATE).views_changed)
    plain = extract(READ)
    assert plain.tables_read == ("revenue0", "tpch.supplier")
    assert history.expand(plain.tables_read, T0 + timedelta(minutes=1), Catalog()) == (
        "revenue0",
        "tpch.lineitem",
        "tpch.supplier",
    )
    assert history.expand(plain.tables_read, T0 - timedelta(minutes=1), Catalog()) == plain.tables_read
    assert history.names() == {"revenue0"}


def test_a_view_of_a_view_is_followed() -> None:
    inner = "CREATE VIEW a AS SELECT * FROM base.t"
    outer = "CREATE VIEW b AS SELECT * FROM a"
    got = extract_history(
        [(T0, inner), (T0 + timedelta(seconds=1), outer), (T0 + timedelta(seconds=2), "SELECT * FROM b")]
    )
    assert got[2].tables_read == ("a", "b", "base.t")
    history = ViewHistory()
    history.record(T0, extract(inner).views_changed)
    history.record(T0, extract(outer).views_changed)
    assert history.expand(("b",), T0, Catalog()) == ("a", "b", "base.t")


def test_the_same_text_in_one_statement_reads_its_own_view() -> None:
    got = extract(f"{CREATE}; {READ}; DROP VIEW revenue0")
    assert got.tables_read == ("revenue0", "tpch.lineitem", "tpch.supplier")
    assert [name for name, _ in got.views_changed] == ["revenue0", "revenue0"]
    assert got.views_changed[-1][1] is None
