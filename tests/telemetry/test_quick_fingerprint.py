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


# The quick fingerprint as it was first written, a token at a time (2.6 times the CPU): the reference the
# run-at-a-time lexer must equal, on every text, answer or decline.
_ONE_LEXEME = re.compile(
    r"""(?P<space>\s+)
    |(?P<line>--[^\n]*)
    |(?P<block>/\*(?!\+).*?\*/)
    |(?P<word>[^\W\d]\w*)
    |(?P<name>`(?:[^`]|``)*`)
    |(?P<string>'[^'\\]*'|"[^"\\]*")
    |(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?(?![\w.]))
    |(?P<other>[^\s\w`'"$\\/-]|/(?![*])|-(?!-))""",
    re.VERBOSE | re.DOTALL,
)


def _a_token_at_a_time(text: str) -> str | None:
    out: list[str] = []
    gap = False
    position = 0
    words = ["", ""]
    previous = ""
    for lexeme in _ONE_LEXEME.finditer(text):
        if lexeme.start() != position:
            return None
        position = lexeme.end()
        kind, piece = lexeme.lastgroup, lexeme.group()
        if kind in ("space", "line", "block"):
            if kind == "block" and "/*" in piece[2:]:
                return None
            gap = True
            continue
        if kind == "string":
            if previous == "word" and not gap:
                return None
            if not (previous == "(" and words[-1] in ("identifier", "table_changes")):
                piece = "'?'"
        elif kind == "number":
            if out and out[-1] == "." and not gap:
                return None
            ordinal = previous == "," or (
                previous == "by" and words[-2] in ("group", "order", "sort", "cluster", "distribute")
            )
            if not ordinal:
                piece = "0"
        if gap and out:
            out.append(" ")
        gap = False
        out.append(piece)
        if kind == "word":
            folded = piece.casefold()
            words = [words[-1], folded]
            previous = "by" if folded == "by" else "word"
        else:
            previous = piece if kind == "other" else kind or ""
    return "".join(out) if position == len(text) else None


# Pieces that meet every rule of the lexer: case, ordinals, name calls, prefixed and unclosed literals,
# numbers run into letters or dots, hints and nested comments, Unicode letters, digits and spaces.
_PIECES = [
    "SELECT", "select", "By", "BY", "by", "group", "ORDER", "sort", "identifier", "IDENTIFIER",
    "table_changes", "a", "t1", "_x", "é", "ß", "\u0663", "\u00b2", "1", "10", "1.5", ".5", "1e5", "1E-3",
    "10L", "1e", "'s'", "'a--b'", "'/*'", '"d"', "r'x'", "x'1F'", "`q`", "`a``b`", "``", "`a b`", "(", ")",
    ",", ".", "*", "/", "-", "--", "-- c\n", "/* c */", "/*+ h */", "/* /* n */ */", "/*", "*/", "$", "\\",
    " ", "  ", "\n", "\t", "\u00a0", "\x1c", "=", "<", ";", "'", "`", '"',
]  # fmt: skip


def test_the_run_lexer_equals_the_token_lexer_on_every_mix_of_pieces() -> None:
    rng = random.Random(11)
    for _ in range(60_000):
        text = "".join(rng.choice(_PIECES) + rng.choice(("", "", " ")) for _ in range(rng.randint(1, 12)))
        assert quick_fingerprint(text) == _a_token_at_a_time(text), repr(text)


def test_the_run_lexer_equals_the_token_lexer_on_histories() -> None:
    texts = [*distinct_texts(random.Random(13), 5000), *public_statements()]
    for text in texts:
        assert quick_fingerprint(text) == _a_token_at_a_time(text), repr(text)
