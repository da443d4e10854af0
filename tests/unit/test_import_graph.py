"""The core's module graph: no import cycles (function-local imports count too), the AWS adapters never
reach into local-only modules, and the backend-neutral distiller code never imports the AWS package."""

from __future__ import annotations

import ast
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
# what only the embedded deployment runs: an AWS adapter importing one of these is a wrong arrow
LOCAL_ONLY = (
    "episodic.store.sqlite",
    "episodic.store.matrix",
    "episodic.store.schema",
    "episodic.embed.minilm",
    "episodic.embed.cache",
    "episodic.distill.heuristic",
    "episodic.distill.claude_code",
    "episodic.hook",
    "episodic.cli",
    "episodic.setup_clients",
    "episodic.remember",
    "episodic.mcp.http_server",
    "episodic.mcp.stdio",
    "episodic.evaluation",
    "episodic.harvest",
)


def module_graph() -> dict[str, set[str]]:
    files = {}
    for path in SHARED.rglob("*.py"):
        name = ".".join(path.relative_to(SHARED).with_suffix("").parts).removesuffix(".__init__")
        files[name] = path
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, base] if base else parts)
                targets.add(base)
                targets.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {t for t in targets if t in files and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_among_episodic_modules() -> None:
    graph = module_graph()
    assert len(graph) > 90  # the whole package was read
    assert cycles(graph) == []


def test_aws_adapters_import_no_local_only_module() -> None:
    graph = module_graph()
    wrong = {
        name: sorted(t for t in targets if t.startswith(LOCAL_ONLY))
        for name, targets in graph.items()
        if name.startswith("episodic.aws")
    }
    assert {name: targets for name, targets in wrong.items() if targets} == {}


def test_backend_neutral_code_never_imports_the_aws_package() -> None:
    graph = module_graph()
    neutral = ("episodic.distill", "episodic.ingest", "episodic.store", "episodic.search", "episodic.memory")
    upward = {
        name: sorted(t for t in targets if t.startswith("episodic.aws"))
        for name, targets in graph.items()
        if name.startswith(neutral)
    }
    assert {name: targets for name, targets in upward.items() if targets} == {}
