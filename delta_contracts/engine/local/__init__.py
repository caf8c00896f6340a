"""The embedded `local` engine: `engine` (LocalEngine), its op table (`ops`) and the conditions its routes are
decided by (`routes`), the paths an op takes besides Sail (`delta_rs`, `delta_spark`), and the rewrite of a
table no path can change in place (`rewrite`). Importing this package imports nothing heavy: `LocalEngine`,
which `from delta_contracts.engine.local import LocalEngine` still finds here, is imported when first
asked."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from delta_contracts.engine.local.engine import LocalEngine as LocalEngine


def __getattr__(name: str) -> Any:
    if name != "LocalEngine":
        raise AttributeError(name)
    from delta_contracts.engine.local.engine import LocalEngine

    return LocalEngine


__all__ = ["LocalEngine"]
