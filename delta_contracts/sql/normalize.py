"""Compare SQL expressions by meaning of their text, not by spelling (quoting, case, spacing)."""

from __future__ import annotations

import re
from functools import lru_cache

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from delta_contracts.sql.dialect import DIALECT


@lru_cache(maxsize=4096)
def normalized(sql: str) -> str:
    """A canonical text of an expression or query; the input itself when it does not parse."""
    try:
        tree = sqlglot.parse_one(sql, read=DIALECT)
    except (ParseError, TokenError):
        return sql.strip()
    for ident in tree.find_all(exp.Identifier):
        ident.set("this", ident.this.casefold())
        ident.set("quoted", True)
    while isinstance(tree, exp.Paren):
        tree = tree.this
    return tree.sql(dialect=DIALECT, normalize_functions="upper")


def same_expression(left: str, right: str) -> bool:
    return left == right or normalized(left) == normalized(right)


# What a query-history text is deduplicated by: its tokens (sqlglot's tokenizer knows comments, strings and
# quoted names), comments and spacing dropped, literals folded. A regex over the raw text cannot tell a `--`
# inside a string from a comment, and folding newlines leaves a line comment running to the end of the
# statement: the tokens never change what the statement reads.
_STRINGS = ("STRING", "NATIONAL_STRING", "RAW_STRING")
# A number right after these keeps its value: `GROUP BY 1` / `ORDER BY 2, 3` name columns by position.
_ORDINAL_CONTEXT = ("GROUP_BY", "ORDER_BY", "SORT_BY", "CLUSTER_BY", "DISTRIBUTE_BY", "COMMA")
# A string right after these keeps its value: `IDENTIFIER('sales.orders')`, `table_changes('t', 1)`
# name a table.
_NAME_CALLS = frozenset({"identifier", "table_changes"})


def fingerprint(text: str, *, dialect: str = DIALECT) -> str:
    """The text with comments removed, spacing folded and literals replaced (`'?'`, `0`): statements that
    differ only there read the same tables and columns. Untokenizable text comes back stripped, unchanged.
    The common text goes through `quick_fingerprint`; what it declines, through sqlglot's tokenizer."""
    if dialect == DIALECT:
        quick = quick_fingerprint(text)
        if quick is not None:
            return quick
    return tokenized_fingerprint(text, dialect=dialect)


# The lexer of `quick_fingerprint`: C regex code over the text instead of sqlglot's tokenizer in Python (a
# history of millions of distinct texts is fingerprinted in seconds, not minutes). It knows only the plain
# spellings — words, backquoted names, '…' and "…" strings (both strings in Spark SQL), numbers, comments,
# spacing — and declines every text with anything else (a backslash, `$`, a hint, a nested or unclosed
# comment or quote, a prefixed string such as r'…' or x'…', a number run into a letter such as 10L), which
# sqlglot's tokenizer then takes.
# A `run` is words, punctuation and spacing, which the fingerprint keeps as they are but for the spacing:
# matched whole, not a token at a time, as the per-match cost of Python's regex engine was most of the time
# (a typical text is 4-5 matches instead of about 40; 2.6 times less CPU). Words start with an ASCII letter
# first only because that test is cheaper than `[^\W\d]`; the match is the same.
_LEXEME = re.compile(
    r"""(?P<run>(?:[A-Za-z_][A-Za-z0-9_]*\w*|[^\w`'"$\\/-]+|[^\W\d]\w*|/(?![*])|-(?!-))+)
    |(?P<line>--[^\n]*)
    |(?P<block>/\*(?!\+).*?\*/)
    |(?P<name>`(?:[^`]|``)*`)
    |(?P<string>'[^'\\]*'|"[^"\\]*")
    |(?P<number>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?(?![\w.]))""",
    re.VERBOSE | re.DOTALL,
)
_WORD = re.compile(r"\w+")  # in a run, each is one word: a number starts no word
_ORDINAL_AFTER = frozenset({"group", "order", "sort", "cluster", "distribute"})


def quick_fingerprint(text: str) -> str | None:
    """`fingerprint` of a text in the plain spellings, as sqlglot's tokenizer would make it; None when the
    text has anything else (the caller then tokenizes it)."""
    out: list[str] = []
    gap = False
    position = 0
    words: list[str] = ["", ""]  # the last two words, casefolded (GROUP BY, IDENTIFIER ()
    unread: list[str] = []  # runs whose words are not in `words` yet: read only when a literal asks
    previous = ""  # the last token's kind: "word", "by", "string", "number", "name" or a punctuation mark
    for lexeme in _LEXEME.finditer(text):
        start, position_after = lexeme.span()
        if start != position:
            return None  # a character no rule takes (a backslash, `$`, an unclosed quote or comment)
        position = position_after
        kind = lexeme.lastgroup
        piece = lexeme.group()
        if kind == "run":
            parts = piece.split()  # str.split's spacing is the regex's \s
            if not parts:
                gap = True
                continue
            if (gap or piece[0].isspace()) and out:
                out.append(" ")
            out.append(" ".join(parts))
            gap = piece[-1].isspace()
            unread.append(piece)
            last = parts[-1][-1]
            previous = "word" if last.isalnum() or last == "_" else last
            continue
        if kind in ("line", "block"):
            if kind == "block" and "/*" in piece[2:]:
                return None  # nested comments: Spark closes them in pairs
            gap = True
            continue
        if previous in ("word", "(") and unread:
            words = _last_words(words, unread)
            unread.clear()
        if previous == "word" and words[-1] == "by":
            previous = "by"
        if kind == "string":
            if previous == "word" and not gap:
                return None  # r'…', x'…', b'…': a prefixed literal
            if not (previous == "(" and words[-1] in _NAME_CALLS):
                piece = "'?'"
        elif kind == "number":
            if previous == "." and not gap:
                return None  # `.5`, `a.1`: left to the tokenizer
            if not (previous == "," or (previous == "by" and words[-2] in _ORDINAL_AFTER)):
                piece = "0"
        if gap and out:
            out.append(" ")
        gap = False
        out.append(piece)
        previous = kind or ""
    if position != len(text):
        return None
    return "".join(out)


def _last_words(words: list[str], runs: list[str]) -> list[str]:
    for run in runs:
        found = _WORD.findall(run)
        if len(found) > 1:
            words = [found[-2].casefold(), found[-1].casefold()]
        elif found:
            words = [words[-1], found[0].casefold()]
    return words


def tokenized_fingerprint(text: str, *, dialect: str = DIALECT) -> str:
    """`fingerprint` by sqlglot's tokenizer: every spelling the dialect knows."""
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.tokenizer_core import TokenType

    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(text)
    except Exception:  # the tokenizer raises more than TokenError on odd input
        return text.strip()
    strings = {TokenType[name] for name in _STRINGS}
    ordinal_context = {TokenType[name] for name in _ORDINAL_CONTEXT}
    number, l_paren = TokenType.NUMBER, TokenType.L_PAREN
    out: list[str] = []
    previous_end = -2
    previous_kind = None
    for index, token in enumerate(tokens):
        kind = token.token_type
        start, end = token.start, token.end
        if kind in strings and not (
            previous_kind is l_paren and index >= 2 and tokens[index - 2].text.casefold() in _NAME_CALLS
        ):
            piece = "'?'"
        elif kind is number and previous_kind not in ordinal_context:
            piece = "0"
        else:
            piece = text[start : end + 1]
        if start != previous_end + 1 and out:
            out.append(" ")
        out.append(piece)
        previous_end = end
        previous_kind = kind
    return "".join(out)
