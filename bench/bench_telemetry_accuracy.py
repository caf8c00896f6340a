"""Extraction accuracy on public SQL corpora: exact-match rates of tables read and written, per corpus.

Corpora (tests/data, sources and licences in its README): the TPC-H/TPC-DS query files of Sail, sqlglot and
a sample of Spark's, as the files stand (licence headers and comments kept), and the hand-labelled MERGE /
INSERT / CTAS / RTAS / VIEW / UPDATE / DELETE / pipe statements. Expected tables come from derivations
independent of the extractor (tests/telemetry/corpora.py). Also prints, per corpus, how often extracting
from the fingerprint (the deduplicated text) gives exactly what extracting from the original gives.

Run: .venv/bin/python bench/bench_telemetry_accuracy.py [--spark]   (--spark: Spark's parser as fallback)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from delta_contracts.sql.extract import FallbackParser, extract
from delta_contracts.sql.normalize import fingerprint
from tests.telemetry.corpora import Case, hand_cases, tpc_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spark", action="store_true", help="ask Spark's parser what sqlglot cannot parse")
    parser.add_argument("--misses", action="store_true", help="list every miss")
    args = parser.parse_args()
    fallback: FallbackParser | None = None
    if args.spark:
        from delta_contracts.engine.spark.sql_names import spark_fallback_parser
        from tests.spark_parser import classic_session

        fallback = spark_fallback_parser(classic_session())
    cases = tpc_cases() + hand_cases()
    by_corpus: dict[str, list[Case]] = defaultdict(list)
    for case in cases:
        by_corpus[case.corpus].append(case)
    header = f"{'corpus':<22} {'n':>4} {'reads exact':>12} {'writes exact':>13} {'both':>7}"
    print(f"{header} {'fingerprint same':>17}")
    started = time.perf_counter()
    totals = [0, 0, 0, 0, 0]
    misses: list[str] = []
    for corpus, group in sorted(by_corpus.items()):
        reads_ok = writes_ok = both_ok = same = 0
        for case in group:
            got = extract(case.text, fallback_parser=fallback)
            reads_hit = tuple(got.tables_read) == case.reads
            writes_hit = tuple(got.tables_written) == case.writes
            reads_ok += reads_hit
            writes_ok += writes_hit
            both_ok += reads_hit and writes_hit
            folded = extract(fingerprint(case.text), fallback_parser=fallback)
            same += (folded.tables_read, folded.tables_written) == (got.tables_read, got.tables_written)
            if not (reads_hit and writes_hit):
                found = f"reads {list(got.tables_read)} writes {list(got.tables_written)}"
                misses.append(
                    f"{corpus}:{case.key}: got {found} (error {got.error!r});"
                    f" expected {list(case.reads)} / {list(case.writes)}"
                )
        n = len(group)
        print(
            f"{corpus:<22} {n:>4} {_pct(reads_ok, n):>12} {_pct(writes_ok, n):>13} {_pct(both_ok, n):>7}"
            f" {_pct(same, n):>17}"
        )
        for i, v in enumerate((n, reads_ok, writes_ok, both_ok, same)):
            totals[i] += v
    n = totals[0]
    print(
        f"{'all':<22} {n:>4} {_pct(totals[1], n):>12} {_pct(totals[2], n):>13} {_pct(totals[3], n):>7}"
        f" {_pct(totals[4], n):>17}"
    )
    print(f"{len(cases)} statements, {time.perf_counter() - started:.1f} s (each extracted twice)")
    if args.misses or misses:
        for line in misses:
            print("miss:", line)


def _pct(hit: int, total: int) -> str:
    return f"{100.0 * hit / total:.1f}%" if total else "-"


if __name__ == "__main__":
    main()
