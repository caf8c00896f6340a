"""The quick fingerprint (one regex pass) against sqlglot's tokenizer: the same text wherever it answers,
declined where a spelling is beyond it, and never one fingerprint for two statements that read differently."""

from __future__ import annotations

import random
import re
from collections import defaultdict

import pytest

from bench.bench_telemetry import WATCHED, distinct_texts
from delta_contracts.sql.extract import extract
from delta_contracts.sql.normalize import fingerprint, quick_fingerprint, tokenized_fingerprint
from tests.telemetry.public_history import public_statements


def _spaced(text: str) -> str:
    # sqlglot keeps the spacing inside a keyword of several words (`ORDER  BY`); the quick one folds it
    return re.sub(r"\s+", " ", text)


def test_the_public_statements_fingerprint_as_the_tokenizer_does() -> None:
    statements = public_statements()
    quick = [quick_fingerprint(s) for s in statements]
    answered = [(s, q) for s, q in zip(statements, quick, strict=True) if q is not None]
    assert len(answered) > 0.95 * len(statements)
    differ = {s: tokenized_fingerprint(s) for s, q in answered if q != _spaced(tokenized_fingerprint(s))}
    # sqlglot tokenizes what follows a command word (SHOW, EXPLAIN, VACUUM, OPTIMIZE) as one string: `SHOW
    # VIEWS IN a` and `… IN b` were one fingerprint there; here they keep their names
    assert all(re.fullmatch(r"\w+ '\?'", tokenized) for tokenized in differ.values()), list(differ)[:3]
    assert len(differ) < 0.02 * len(statements)


def test_generated_history_texts_fingerprint_as_the_tokenizer_does() -> None:
    texts = [t for t in distinct_texts(random.Random(5), 5000) if t.isprintable()]
    for text in texts:
        quick = quick_fingerprint(text)
        assert quick is None or quick == _spaced(tokenized_fingerprint(text)), text


@pytest.mark.parametrize(
    "text",
    [
        r"SELECT 'a\'b' FROM t",  # a backslash escape
        "SELECT r'a' FROM t",  # prefixed literals
        "SELECT x'1F' FROM t",
        "SELECT 10L FROM t",  # a number run into a letter
        "SELECT a FROM t WHERE b = .5",
        "SELECT /*+ BROADCAST(t) */ a FROM t",  # a hint
        "SELECT /* a /* nested */ */ a FROM t",
        "SELECT 'open FROM t",  # unclosed
        "SELECT a FROM t /* open",
        "SELECT ${var} FROM t",  # substitution
    ],
)
def test_spellings_beyond_the_quick_lexer_are_declined_and_tokenized(text: str) -> None:
    assert quick_fingerprint(text) is None
    assert fingerprint(text) == tokenized_fingerprint(text)


def test_texts_that_share_a_quick_fingerprint_read_the_same() -> None:
    groups: dict[str, list[str]] = defaultdict(list)
    for text in distinct_texts(random.Random(9), 4000):
        quick = quick_fingerprint(text)
        if quick is not None:
            groups[quick].append(text)
    shared = [members for members in groups.values() if len(members) > 1]
    assert len(shared) > 20
    for members in shared:
        reads = {
            (got.tables_read, got.columns_read, got.tables_written)
            for got in (extract(text, WATCHED.catalog) for text in members[:4])
        }
        assert len(reads) == 1, members[:4]
