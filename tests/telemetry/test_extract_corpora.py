"""Extraction on public SQL corpora as the files stand (licence headers, comments), against expectations
derived without the extractor, and the fingerprint (the deduplicated text) never changing what is read."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from delta_contracts.sql.extract import extract
from delta_contracts.sql.normalize import fingerprint
from delta_contracts.sql.rewrite import tokenize
from tests.telemetry.corpora import (
    TPCDS_TABLES,
    TPCH_TABLES,
    Case,
    hand_cases,
    hand_limitations,
    scope_tables,
    spark_relations,
    tpc_cases,
    word_list_tables,
)

TPC = tpc_cases()
HAND = hand_cases()
ALL = TPC + HAND
extracted = cache(extract)  # each corpus text is extracted once for every test that asks
SAVED = spark_relations()


def _id(case: Case) -> str:
    return f"{case.corpus}:{case.key}"


def test_the_corpora_are_all_there() -> None:
    corpora = {c.corpus for c in TPC}
    assert corpora == {"sail-tpch", "sail-tpcds", "spark-tpc", "sqlglot-tpc-h", "sqlglot-tpc-ds"}
    assert len(TPC) == 22 + 99 + 6 + 22 + 99
    assert len(HAND) >= 50


@pytest.mark.parametrize("case", TPC, ids=_id)
def test_tpc_statement_as_the_file_stands(case: Case) -> None:
    """The derivations agree (the TPC schema's word list, sqlglot's scopes (the expectation of Spark's and
    sqlglot's files; Sail's are tpc_tables.json, checked by hand) and Spark's parser, saved offline); the
    extraction is exact; its fingerprint reads the same."""
    tpc_reads = tuple(r for r in case.reads if r in TPCH_TABLES | TPCDS_TABLES)
    assert word_list_tables(case) == tpc_reads  # a view the text creates (q15's revenue0) is no TPC word
    saved = SAVED.get(_id(case))
    if saved is not None and "read" in saved:
        assert (tuple(saved["read"]), tuple(saved["written"])) == (case.reads, case.writes)
    got = extracted(case.text)
    assert got.error is None
    assert (got.tables_read, got.tables_written) == (case.reads, case.writes)
    _assert_the_fingerprint_reads_the_same(case.text)


def test_sails_tpch_expectations_match_sqlglots_scopes() -> None:
    for case in TPC:
        if case.corpus.startswith("sail-tpch"):
            assert scope_tables(case.text) == (case.reads, case.writes), case.key


def test_hand_labelled_statements_are_at_least_95_percent_exact() -> None:
    limitations = hand_limitations()
    misses = []
    for case in HAND:
        _assert_the_fingerprint_reads_the_same(case.text)
        got = extracted(case.text)
        if (got.tables_read, got.tables_written) != (case.reads, case.writes):
            misses.append(case.key)
    assert set(misses) <= set(limitations), f"undocumented misses: {set(misses) - set(limitations)}"
    assert len(misses) <= 0.05 * len(HAND)


@pytest.mark.parametrize("key", sorted(hand_limitations()))
def test_each_documented_limitation_behaves_as_documented(key: str) -> None:
    """A limitation is what the file says: sqlglot cannot read the statement, so it is an error (its
    names then count as possible readers), never a silent wrong answer."""
    case = next(c for c in HAND if c.key == key)
    gives = hand_limitations()[key]["gives"]
    got = extract(case.text)
    assert list(got.tables_read) == gives["reads"]
    assert list(got.tables_written) == gives["writes"]
    assert (got.error is not None) == gives["error"]


def test_the_spark_derivation_agrees_with_the_hand_labels() -> None:
    saved = SAVED
    checked = 0
    for case in HAND:
        found = saved.get(_id(case))
        if found is None or "read" not in found:
            continue
        checked += 1
        assert (tuple(found["read"]), tuple(found["written"])) == (case.reads, case.writes), case.key
    assert checked >= 0.9 * len(HAND)


def _assert_the_fingerprint_reads_the_same(text: str) -> None:
    original = extracted(text)
    folded = extract(fingerprint(text))
    assert (folded.tables_read, folded.tables_written, folded.error is None) == (
        original.tables_read,
        original.tables_written,
        original.error is None,
    ), text


NOISE = st.sampled_from(
    [" ", "\n", "\t", "  \n  ", " -- a comment; FROM x.y\n", "/* FROM hidden.t */", " /* multi\nline */ "]
)


SHORT = [c for c in ALL if len(c.text) < 1500]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(SHORT), data=st.data())
def test_comments_and_spacing_anywhere_change_nothing(case: Case, data: st.DataObject) -> None:
    """Comments and whitespace put between any two tokens (a line comment ends at its newline) change
    neither what the statement reads nor its fingerprint's reads."""
    tokens = tokenize(case.text)
    pieces = []
    for index, token in enumerate(tokens):
        if index and data.draw(st.booleans()):
            pieces.append(data.draw(NOISE))
        elif index:
            pieces.append(" ")
        pieces.append(case.text[token.start : token.end + 1])
    noisy = "".join(pieces)
    expected = extracted(case.text)
    got = extract(noisy)
    assert (got.tables_read, got.tables_written) == (expected.tables_read, expected.tables_written)
    assert fingerprint(noisy) == fingerprint(" ".join(case.text[t.start : t.end + 1] for t in tokens))
    folded = extract(fingerprint(noisy))
    assert (folded.tables_read, folded.tables_written) == (expected.tables_read, expected.tables_written)


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


@settings(max_examples=30, deadline=None)
@given(
    number=st.integers(min_value=0, max_value=10**12),
    string=st.text(alphabet="ab'\\-/*; \n", max_size=12),
)
def test_literals_fold_to_one_fingerprint(number: int, string: str) -> None:
    """Statements that differ only in their literals (even strings holding comment markers or a semicolon)
    share a fingerprint, and it reads what they read."""
    template = "SELECT a FROM sales.orders WHERE b = {} AND d = {} AND c IN (SELECT c FROM sales.refs)"
    text = template.format(number, _quoted(string))
    assert fingerprint(text) == fingerprint(template.format(7, "'x'"))
    assert extract(fingerprint(text)).tables_read == ("sales.orders", "sales.refs")


def test_the_fingerprint_keeps_what_names_a_table_or_a_column() -> None:
    assert "'sales.orders'" in fingerprint("SELECT * FROM IDENTIFIER('sales.orders') WHERE a = 'x'")
    assert (
        fingerprint("SELECT a, b FROM t GROUP BY 1, 2 ORDER BY 2")
        == "SELECT a, b FROM t GROUP BY 1, 2 ORDER BY 2"
    )
    assert fingerprint("select `a--b`, 'it''s' -- gone\nfrom t") == "select `a--b`, '?''?' from t"
