"""A table's version from its log folder's listing (delta_contracts/engine/spark/log_version.py): which
locations are local folders, which files are commits, and when the listing is trusted. Executed against
delta-spark tables by tests/engine/test_spark_log_version.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.spark.log_version import LogVersions, listed_version, local_log_folder


@pytest.mark.parametrize(
    ("location", "folder"),
    [
        ("file:/data/wh/sales.db/orders", "/data/wh/sales.db/orders/_delta_log"),
        ("file:///data/wh/Sales.db/Orders", "/data/wh/Sales.db/Orders/_delta_log"),
        ("file://localhost/data/t", "/data/t/_delta_log"),
        ("file:/data/My%20Dir/t", "/data/My Dir/t/_delta_log"),
        ("/data/wh/t", "/data/wh/t/_delta_log"),
        ("s3://bucket/wh/t", None),
        ("abfss://c@acct.dfs.core.windows.net/t", None),
        ("dbfs:/user/hive/warehouse/t", None),
        ("file://otherhost/data/t", None),
        ("relative/t", None),
    ],
)
def test_only_a_local_folder_is_listed(location: str, folder: str | None) -> None:
    found = local_log_folder(location)
    assert (None if found is None else str(found)) == folder


def _log(tmp_path: Path, *names: str) -> Path:
    log = tmp_path / "_delta_log"
    log.mkdir()
    for name in names:
        (log / name).write_text("{}", encoding="utf-8")
    return log


def test_the_newest_commit_file_is_the_version(tmp_path: Path) -> None:
    log = _log(
        tmp_path,
        "00000000000000000000.json",
        "00000000000000000009.json",
        "00000000000000000010.json",
        "00000000000000000010.crc",
        "00000000000000000010.checkpoint.parquet",
        "00000000000000000011.00000000000000000012.compacted.json",  # log compaction: no commit of its own
        "_last_checkpoint",
        ".00000000000000000013.json.tmp",  # being written: not a commit yet
    )
    assert listed_version(log) == 10


def test_no_commit_or_no_folder_or_staged_commits_is_no_version(tmp_path: Path) -> None:
    assert listed_version(tmp_path / "missing") is None
    log = _log(tmp_path, "_last_checkpoint")
    assert listed_version(log) is None
    (log / "00000000000000000003.json").write_text("{}", encoding="utf-8")
    assert listed_version(log) == 3
    staged = log / "_staged_commits"
    staged.mkdir()
    assert listed_version(log) == 3  # an empty staging folder hides nothing
    (staged / "00000000000000000004.uuid.json").write_text("{}", encoding="utf-8")
    assert listed_version(log) is None  # a catalog-managed table's commit not in the log yet


def test_a_listing_is_trusted_only_after_it_agreed_with_describe_history(tmp_path: Path) -> None:
    table = tmp_path / "t"
    table.mkdir()
    _log(table, "00000000000000000002.json")
    versions = LogVersions()
    location = f"file:{table}"
    assert versions.version(location) is None  # not checked yet: DESCRIBE HISTORY answers
    versions.check(location, 2)
    assert versions.version(location) == 2
    (table / "_delta_log" / "00000000000000000003.json").write_text("{}", encoding="utf-8")
    assert versions.version(location) == 3  # read afresh each time

    other = tmp_path / "u"
    other.mkdir()
    _log(other, "00000000000000000005.json")
    versions.check(f"file:{other}", 6)  # a commit came in between, or another machine's folder
    assert versions.version(f"file:{other}") is None
    versions.check(f"file:{other}", 5)  # checked once: never trusted there
    assert versions.version(f"file:{other}") is None
    versions.check("s3://bucket/t", 1)
    assert versions.version("s3://bucket/t") is None
