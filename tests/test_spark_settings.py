"""The settings of the session `--engine spark` starts: the toolkit's, then spark-defaults.conf, then
contracts.yml, then --conf; the catalog in the warehouse unless the user names one."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.spark_session import (
    SparkConfError,
    parse_conf,
    read_spark_defaults,
    session_settings,
    spark_defaults_file,
)

OURS = {"spark.sql.shuffle.partitions": "2", "spark.jars": "/jars/delta.jar", "spark.ui.enabled": "false"}


def test_the_users_settings_win_and_lists_are_joined(tmp_path: Path) -> None:
    settings = session_settings(
        OURS,
        tmp_path,
        defaults={"spark.ui.enabled": "true", "spark.jars": "/site/extra.jar"},
        project={"spark.sql.shuffle.partitions": "64"},
        command_line={"spark.sql.shuffle.partitions": "8"},
    )
    assert settings["spark.sql.shuffle.partitions"] == "8"  # --conf over contracts.yml over ours
    assert "spark.ui.enabled" not in settings  # spark-defaults.conf's, which spark-submit reads itself
    assert settings["spark.jars"] == "/site/extra.jar,/jars/delta.jar"
    assert settings["spark.sql.catalogImplementation"] == "hive"
    assert settings["spark.hadoop.javax.jdo.option.ConnectionURL"] == (
        f"jdbc:derby:;databaseName={tmp_path.resolve() / 'metastore_db'};create=true"
    )


def test_a_catalog_of_the_users_own_gets_no_metastore_of_ours(tmp_path: Path) -> None:
    settings = session_settings(
        OURS,
        tmp_path,
        defaults={},
        project={"spark.hadoop.hive.metastore.uris": "thrift://m:9083"},
        command_line={},
    )
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in settings
    assert settings["spark.sql.warehouse.dir"] == str(tmp_path.resolve())


def test_spark_defaults_and_conf_items(tmp_path: Path) -> None:
    (tmp_path / "spark-defaults.conf").write_text(
        "# site settings\nspark.sql.ansi.enabled   false\nspark.master=local[4]\n\n", encoding="utf-8"
    )
    found = spark_defaults_file({"SPARK_CONF_DIR": str(tmp_path)})
    assert found == tmp_path / "spark-defaults.conf"
    assert read_spark_defaults(found) == {"spark.sql.ansi.enabled": "false", "spark.master": "local[4]"}
    assert spark_defaults_file({}) is None
    assert parse_conf(["a.b=c=d", " x = 1 "]) == {"a.b": "c=d", "x": "1"}
    with pytest.raises(SparkConfError, match="key=value"):
        parse_conf(["spark.sql.ansi.enabled"])
