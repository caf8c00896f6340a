"""Unity Catalog as the place a Spark session's tables live: the catalogs of one server registered through
`io.unitycatalog.spark.UCSingleCatalog` (`spark.sql.catalog.<name>` = the class, `.uri`, `.token`), and the
connector's jars beside delta-spark's.

A session the command starts gets them among its settings; a session already running (a notebook's, the test
suite's) gets the catalogs registered on it, which Spark allows at any time: a catalog plugin is loaded on
first use from the session's settings then. The jars cannot be added to a running session: one started
without them is told so, with the way out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from delta_contracts.contract.unity import UnityCatalogSettings
from delta_contracts.engine.base import EngineChoiceError
from delta_contracts.engine.jars import UNITY_CATALOG_CLASS

CATALOG_CLASS = UNITY_CATALOG_CLASS
TOKEN_ENV = "DELTA_CONTRACTS_UC_TOKEN"
URI_ENV = "DELTA_CONTRACTS_UC_URI"
NO_TOKEN = "no-token"


def catalog_settings(unity: UnityCatalogSettings) -> dict[str, str]:
    """The Spark settings that register each of the server's catalogs the project names."""
    uri = unity.uri or os.environ.get(URI_ENV) or ""
    if not uri:
        raise EngineChoiceError(
            f"engine.unity_catalog names catalogs ({', '.join(unity.catalogs)}) but no server: give its uri "
            f"(contracts.yml engine.unity_catalog.uri, or {URI_ENV})"
        )
    # The 0.6.0 connector refuses a catalog without a token ("Required configuration key 'type' is missing",
    # measured with an empty one); a server without authorization ignores the one it is sent.
    token = unity.token or os.environ.get(TOKEN_ENV) or NO_TOKEN
    out: dict[str, str] = {}
    for name in unity.catalogs:
        key = f"spark.sql.catalog.{name}"
        out[key] = CATALOG_CLASS
        out[f"{key}.uri"] = uri
        out[f"{key}.token"] = token
    return out


def connector_jar_settings() -> dict[str, str]:
    """The connector's jars (cached by `delta-contracts jars unitycatalog`) for `spark.jars`."""
    from delta_contracts.engine.jars import unity_connector_jars

    return {"spark.jars": ",".join(str(p) for p in unity_connector_jars())}


def register_on(session: Any, settings: Mapping[str, str], *, check_jar: bool = True) -> None:
    """Register the catalogs on a running session. One whose JVM lacks the connector cannot load them:
    refused now, naming the way out, rather than at the first statement on a three-level name."""
    if check_jar and settings:
        jvm = session.sparkContext._jvm
        try:
            jvm.java.lang.Class.forName(
                CATALOG_CLASS, False, jvm.Thread.currentThread().getContextClassLoader()
            )
        except Exception:  # Py4J's error of a class not found: the session was started without the jar
            raise EngineChoiceError(
                f"the running Spark session has no Unity Catalog connector ({CATALOG_CLASS}): start it with "
                "the jars `delta-contracts jars unitycatalog` caches in spark.jars (docs/engines.md, "
                '"Unity Catalog")'
            ) from None
    for key, value in settings.items():
        if str(session.conf.get(key, "")) != value:
            session.conf.set(key, value)


def unity_catalogs(session: Any) -> frozenset[str]:
    """The catalogs of the session that are Unity Catalog ones (lower case, as Spark compares them)."""
    names = set()
    try:
        pairs = session.sql("SET").collect()
    except Exception:  # a session that cannot list its settings has none registered by us
        return frozenset()
    for row in pairs:
        key, value = str(row[0]), str(row[1])
        if value == CATALOG_CLASS and key.startswith("spark.sql.catalog.") and key.count(".") == 3:
            names.add(key.rsplit(".", 1)[1].lower())
    return frozenset(names)
