"""The `spark` and `connect` engines: `engine` (SparkEngine), its op table (`ops`), the sessions it runs on
(`session`: a local or command-line session and its settings; `connect`: a Spark Connect server's), what
Spark raises and logs (`errors`), how it reads a table (`describe`) and names in Spark's plans (`sql_names`),
holding producers off a table (`hold`) and the apply ledger as a catalog table (`state_table`).

Importing this package imports nothing heavy; PySpark is imported only when a session is made or used. The
names callers imported from `delta_contracts.engine.spark` when it was one module are still found here, each
imported from its module when first asked."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from delta_contracts.engine.spark.connect import connect_engine as connect_engine
    from delta_contracts.engine.spark.engine import SparkEngine as SparkEngine
    from delta_contracts.engine.spark.session import local_delta_session as local_delta_session

# Lazy: name -> defining module.
_EXPORTS = {
    "SparkEngine": "delta_contracts.engine.spark.engine",
    "connect_engine": "delta_contracts.engine.spark.connect",
    "local_delta_session": "delta_contracts.engine.spark.session",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(name)
    from importlib import import_module

    return getattr(import_module(module), name)


__all__ = ["SparkEngine", "connect_engine", "local_delta_session"]
