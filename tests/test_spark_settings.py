"""The settings of the session `--engine spark` starts: the toolkit's, then spark-defaults.conf, then
contracts.yml, then --conf; the catalog in the warehouse unless the user names one."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_contracts.engine.spark.session import (
    CatalogLockedError,
    SparkConfError,
    catalog_locked,
    embedded_metastore,
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


DERBY_URL = "jdbc:derby://db.internal:1527/metastore;create=true"


def test_a_derby_network_metastore_gets_hive_and_the_client_driver(tmp_path: Path) -> None:
    """The URL alone is enough: Hive support (without it Spark ignores the metastore), the client driver's
    class, and its jar on the driver's class path (joined with the user's)."""
    settings = session_settings(
        OURS,
        tmp_path,
        defaults={"spark.driver.extraClassPath": "/site/lib.jar"},
        project={"spark.hadoop.javax.jdo.option.ConnectionURL": DERBY_URL},
        command_line={},
        derby_client=lambda: Path("/cache/derbyclient-10.16.1.1.jar"),
    )
    assert settings["spark.sql.catalogImplementation"] == "hive"
    assert (
        settings["spark.hadoop.javax.jdo.option.ConnectionDriverName"] == "org.apache.derby.jdbc.ClientDriver"
    )
    assert settings["spark.driver.extraClassPath"] == "/site/lib.jar:/cache/derbyclient-10.16.1.1.jar"
    assert embedded_metastore(settings) is None  # a server: any number of processes


def test_the_users_own_driver_and_catalog_settings_are_kept(tmp_path: Path) -> None:
    def no_fetch() -> Path:
        raise AssertionError("the user's class path already has a Derby client")

    mine = {
        "spark.sql.catalogImplementation": "in-memory",
        "spark.hadoop.javax.jdo.option.ConnectionURL": DERBY_URL,
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": "my.Driver",
        "spark.driver.extraClassPath": "/opt/derbyclient.jar",
    }
    settings = session_settings(
        OURS, tmp_path, defaults={}, project=mine, command_line={}, derby_client=no_fetch
    )
    assert {key: settings[key] for key in mine} == mine
    # Not a Derby network URL: nothing of Derby's is added.
    other = {"spark.hadoop.javax.jdo.option.ConnectionURL": "jdbc:postgresql://pg/metastore"}
    settings = session_settings(
        OURS, tmp_path, defaults={}, project=other, command_line={}, derby_client=no_fetch
    )
    assert "spark.driver.extraClassPath" not in settings
    assert "spark.hadoop.javax.jdo.option.ConnectionDriverName" not in settings


def test_the_embedded_metastore_and_its_lock(tmp_path: Path) -> None:
    settings = session_settings(OURS, tmp_path, defaults={}, project={}, command_line={})
    assert embedded_metastore(settings) == tmp_path.resolve() / "metastore_db"
    assert settings["spark.hadoop.hive.hmshandler.retry.attempts"] == "1"  # refused at once, not in 22 s
    assert embedded_metastore({"javax.jdo.option.ConnectionURL": "jdbc:derby:/srv/ms;create=true"}) == Path(
        "/srv/ms"
    )
    locked = (
        "java.sql.SQLException: Failed to start database\nERROR XSDB6: Another instance of Derby may have"
    )
    assert catalog_locked(locked)
    assert not catalog_locked("java.net.ConnectException: Connection refused")
    message = str(CatalogLockedError(tmp_path / "metastore_db"))
    assert f"metastore {tmp_path / 'metastore_db'} open" in message and "\n" not in message
    assert CatalogLockedError(None).exit_code == 2
