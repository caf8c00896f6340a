"""The package's import graph, read from the source: no cycle between modules, and the pure core (contract,
diff, plan, sql) imports no higher stage and no Spark.

Every import that runs counts, at module level or inside a function; one under `if TYPE_CHECKING:` does not
(it never runs). `from a.b import c` is an edge to the module `a.b.c` when there is one, else to `a.b`. A
package's `__init__` and its own modules are not a cycle: importing `a.b.c` runs `a.b` first, always.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "delta_contracts"
CORE = ("contract", "diff", "plan", "sql")
HIGHER = ("engine", "apply", "telemetry", "quality", "cli", "site", "interchange", "state", "tables")
# The modules at the package's root, placed like the subpackages: leaves that any module, the pure core
# included, may import (they import only each other), and stages above the core (stages are subpackages:
# `state`, `tables` …). `delta_contracts` itself (its lazy exports) and `__main__` count as above the core.
ROOT_LEAVES = ("errors", "instants", "live", "marks", "paths", "tableid", "target")
ROOT_HIGHER = ("__main__", "")
ABOVE_CORE = (*HIGHER, *ROOT_HIGHER)
SPARK = ("pyspark", "delta", "pysail", "deltalake")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs: those under `if TYPE_CHECKING:` are left out."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from (n for branch in node.orelse for n in _runtime_imports_of(branch))
            continue
        yield from _runtime_imports_of(node)


def _runtime_imports_of(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
        return
    yield from _runtime_imports(node)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
        anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    return {f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names}


def _graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets = set()
        for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            targets |= _targets(module, node)
        edges[module] = targets
    return edges


GRAPH = _graph()


def _within_package(a: str, b: str) -> bool:
    """`a` is a package and `b` one of its modules, or the other way round."""
    return b.startswith(f"{a}.") or a.startswith(f"{b}.")


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), over edges between modules of the
    package that are not a package and its own module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in MODULES or _within_package(v, w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_the_graph_is_read() -> None:
    # the reader must see what it checks: a known runtime import, a function-level one, a TYPE_CHECKING one
    assert "delta_contracts.plan.ops" in GRAPH["delta_contracts.plan.sqlfile"]
    assert "delta_contracts.sql.extract_columns" in GRAPH["delta_contracts.sql.extract"]  # inside a function
    assert "delta_contracts.sql.extract" not in GRAPH["delta_contracts.sql.extract_columns"]  # type-only
    assert len(MODULES) > 100


def test_no_import_cycle_between_modules() -> None:
    assert _cycles(GRAPH) == []


def test_the_checker_finds_a_cycle() -> None:
    looped = {
        **GRAPH,
        "delta_contracts.plan.ops": GRAPH["delta_contracts.plan.ops"] | {"delta_contracts.plan.sqlfile"},
    }
    assert any(
        {"delta_contracts.plan.ops", "delta_contracts.plan.sqlfile"} <= set(c) for c in _cycles(looped)
    )


def _core_imports_above_it(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if _stage(module) in CORE
        for target in targets
        if (target.startswith("delta_contracts") and _stage(target) in ABOVE_CORE)
        or target.split(".")[0] in SPARK
    )


def test_the_pure_core_imports_no_higher_stage_and_no_spark() -> None:
    assert _core_imports_above_it(GRAPH) == []


def test_the_checker_finds_the_core_importing_a_root_module_above_it() -> None:
    for above in ("delta_contracts.tables.drift", "delta_contracts.state.ledger", "delta_contracts"):
        wrong = {**GRAPH, "delta_contracts.plan.ops": GRAPH["delta_contracts.plan.ops"] | {above}}
        assert _core_imports_above_it(wrong) == [f"delta_contracts.plan.ops -> {above}"]


def test_every_root_module_is_placed() -> None:
    """A module added at the root must be placed: a leaf the core may import, or a stage above the core."""
    root = {_stage(m) for m, path in MODULES.items() if path.parent == PACKAGE}
    assert root == set(ROOT_LEAVES) | set(ROOT_HIGHER)


def test_the_root_leaves_import_only_each_other() -> None:
    wrong = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if module.count(".") == 1 and _stage(module) in ROOT_LEAVES
        for target in targets
        if (target.startswith("delta_contracts") and _stage(target) not in ROOT_LEAVES)
        or target.split(".")[0] in (*SPARK, "sqlglot")
    )
    assert wrong == []


def _stage_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between stages: a subpackage (`apply`, `telemetry` …) or a top-level module (`ledger`)."""
    stages: dict[str, set[str]] = {}
    for module, targets in edges.items():
        outgoing = stages.setdefault(_stage(module), set())
        outgoing |= {_stage(t) for t in targets if t.startswith("delta_contracts")} - {_stage(module)}
    return stages


def test_no_import_cycle_between_stages() -> None:
    # a stage that imports another imports it whole: `telemetry` reading `apply`'s ledger while `apply` reads
    # `telemetry`'s gate made the two one tangle, though no two modules imported each other
    stages = {
        f"delta_contracts.{s}": {f"delta_contracts.{t}" for t in ts} for s, ts in _stage_graph(GRAPH).items()
    }
    assert _cycles(stages) == []
