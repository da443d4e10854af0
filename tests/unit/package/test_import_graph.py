"""The module graph (function-local and type-only imports count too): no import cycles, the AWS adapters
never reach into local-only modules, and the layers of docs/architecture.md hold: only faces import the assembly,
only the assembly (and the AWS faces) import `aws/`, the core and `mcp/` import no feature, a feature reaches
another only through its port, and every feature package declares its contract and is registered."""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

SHARED = Path(__file__).resolve().parents[3] / "shared"
# what only the embedded deployment runs: an AWS adapter importing one of these is a wrong arrow
LOCAL_ONLY = (
    "episodic.store.sqlite",
    "episodic.store.matrix",
    "episodic.store.schema",
    "episodic.embed.minilm",
    "episodic.embed.cache",
    "episodic.distill.heuristic",
    "episodic.distill.claude_code",
    "episodic.hooks.prompt",
    "episodic.hooks.payload",
    "episodic.hooks.server_client",
    "episodic.hooks.packing",
    "episodic.hooks.failure",
    "episodic.cli",
    "episodic.cli.setup_clients",
    "episodic.cli.remember",
    "episodic.mcp.http_server",
    "episodic.mcp.stdio",
    "episodic.evaluation",
    "episodic.harvest",
)


def module_graph(with_lambdas: bool = False) -> dict[str, set[str]]:
    """A copy a test may plant edges in; the files are parsed once per run."""
    return {name: set(targets) for name, targets in _parsed_graph(with_lambdas).items()}


@functools.cache
def _parsed_graph(with_lambdas: bool) -> dict[str, frozenset[str]]:
    files = {}
    for path in SHARED.rglob("*.py"):
        name = ".".join(path.relative_to(SHARED).with_suffix("").parts).removesuffix(".__init__")
        files[name] = path
    if with_lambdas:  # the Lambda handlers: faces outside the package (`lambdas.<name>.handler`)
        for path in (SHARED.parent / "lambdas").rglob("*.py"):
            files[".".join(path.relative_to(SHARED.parent).with_suffix("").parts)] = path
    modules = set(files)
    graph: dict[str, frozenset[str]] = {}
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
        graph[name] = frozenset(t for t in targets if t in modules and t != name)
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
    neutral = (
        "episodic.distill",
        "episodic.core.ingest",
        "episodic.store",
        "episodic.core.search",
        "episodic.kernel.memory",
    )
    upward = {
        name: sorted(t for t in targets if t.startswith("episodic.aws"))
        for name, targets in graph.items()
        if name.startswith(neutral)
    }
    assert {name: targets for name, targets in upward.items() if targets} == {}


# ---------------------------------------------------------------- the layers (docs/architecture.md), as data

FEATURE_PACKAGES = sorted(p.parent.name for p in (SHARED / "episodic").glob("*/feature.py"))
# the faces: entry points that ask the assembly for what they need (each feature's `cli` module is one too)
FACES = (
    "lambdas.",
    "episodic.cli",
    "episodic.ui",
    "episodic.hooks.prompt",
    "episodic.hooks.payload",  # the prompt hook's parts: what it reads, asks and packs
    "episodic.hooks.server_client",
    "episodic.hooks.packing",
    "episodic.hooks.failure",  # the PostToolUseFailure hook (stdlib only, like the prompt hook)
    "episodic.mcp.http_server",
    "episodic.mcp.stdio",
    "episodic.hooks.session_end",  # the SessionEnd hook's worker
    "episodic.harvest.runner",  # `episodic harvest` and its nightly schedule
    "episodic.evaluation",  # `episodic eval`: assembles one scratch memory per card set
    *(f"episodic.{name}.cli" for name in FEATURE_PACKAGES),
)
# outside the assembly, who may import `aws/`, and why
AWS_FACES = {
    "lambdas.": "the Lambda handlers are the AWS deployment's faces: they run only there",
    "episodic.cli.doctor_aws": "checks a deployed endpoint: the header names the MCP Lambda writes",
}

# an AWS adapter implements a feature's port: it may import that port and its models, and these besides
ADAPTER_REUSE = {
    ("episodic.aws.dynamo_history", "episodic.history.sqlite_store"): "full-text search on an in-memory "
    "SQLite mirror of the tenant's records",
    ("episodic.aws.dream_source", "episodic.dream.source"): "the week's port and its digests, made by the "
    "same functions as the local source's",
}


def _in(name: str, prefixes: tuple[str, ...] | list[str]) -> bool:
    return any(name == p or name.startswith(p if p.endswith(".") else p + ".") for p in prefixes)


def _feature_of(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "episodic" and parts[1] in FEATURE_PACKAGES else None


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that breaks a layer rule, as `importer -> imported: rule`."""
    found = []
    for name, targets in sorted(graph.items()):
        face = _in(name, FACES)
        for target in sorted(targets):
            if _in(target, ["episodic.assembly"]) and not (face or _in(name, ["episodic.assembly"])):
                found.append(f"{name} -> {target}: only faces import the assembly")
            if _in(target, ["episodic.aws"]) and not _in(
                name, ["episodic.aws", "episodic.assembly", *AWS_FACES]
            ):
                found.append(f"{name} -> {target}: only the assembly imports aws/")
            owner, used = _feature_of(name), _feature_of(target)
            if used is None or owner == used or face or _in(name, ["episodic.assembly"]):
                continue
            through_port = _in(target, [f"episodic.{used}.port", f"episodic.{used}.models"])
            if _in(name, ["episodic.aws"]) and (through_port or (name, target) in ADAPTER_REUSE):
                continue  # an adapter of the feature's port
            if owner is None:
                found.append(f"{name} -> {target}: the core and mcp/ import no feature")
            elif not through_port:
                found.append(f"{name} -> {target}: a feature reaches another only through its port")
    return found


def test_the_layers_hold() -> None:
    assert layer_violations(module_graph(with_lambdas=True)) == []


def test_a_planted_violation_of_each_rule_is_found() -> None:
    graph = module_graph(with_lambdas=True)
    planted = {
        "episodic.core.ingest": {"episodic.assembly", "episodic.history.service"},
        "episodic.core.search": {"episodic.aws.s3vectors_store"},
        "episodic.dream.service": {"episodic.history.sqlite_store"},
        "episodic.mcp.tools": {"episodic.scratch.recall"},
    }
    for name, targets in planted.items():
        graph[name] = graph[name] | targets
    assert layer_violations(graph) == sorted(
        [
            "episodic.dream.service -> episodic.history.sqlite_store: a feature reaches another only through its port",
            "episodic.core.ingest -> episodic.assembly: only faces import the assembly",
            "episodic.core.ingest -> episodic.history.service: the core and mcp/ import no feature",
            "episodic.mcp.tools -> episodic.scratch.recall: the core and mcp/ import no feature",
            "episodic.core.search -> episodic.aws.s3vectors_store: only the assembly imports aws/",
        ]
    )


def test_every_feature_package_declares_its_contract_and_is_registered() -> None:
    from episodic.assembly import FEATURES
    from episodic.kernel.feature_contract import Feature
    from episodic.kernel.settings import Settings

    assert FEATURE_PACKAGES == ["dream", "experiment", "failures", "history", "injections", "scratch"]
    declared = {}
    for package in FEATURE_PACKAGES:
        feature = importlib.import_module(f"episodic.{package}.feature").FEATURE
        assert isinstance(feature, Feature)
        declared[package] = feature
        # its settings section exists in the one settings model
        assert any(name.startswith(feature.settings_prefix) for name in Settings.model_fields), package
        for reference in (feature.cli, feature.mcp_tools):  # "module:function", resolved when used
            if reference:
                module, _, name = reference.partition(":")
                assert callable(getattr(importlib.import_module(module), name)), reference
    assert sorted(f.name for f in FEATURES) == sorted(f.name for f in declared.values())
    from episodic.assembly.features import ADAPTED_PARTS

    assert set(ADAPTED_PARTS) <= {f.name for f in FEATURES}  # the assembly builds parts of registered ones


# ---------------------------------------------------------------- the floors (docs/layout.md), as data

# each package's floor: a module imports its own floor and below; faces (floor 9) import anything
FLOORS = {
    "plumbing": 0,  # stdlib only: the hook processes import it before any third-party code
    "kernel": 1,  # models, ports, settings, errors, tokens, the memory's contract
    "scrub": 2,
    "parse": 2,
    "embed": 2,
    "distill": 3,
    "store": 3,
    "judge": 3,  # the local cross-encoder behind ports.Reranker
    "sessions": 4,  # which sessions exist, what is kept of them, ids, estimates
    "cards": 5,  # writing, files, checks, transfer, review, presentation
    "core": 6,  # the two paths: ingest and search
    "mcp": 7,  # the tools (its transports are faces)
    "harvest": 7,
    **{name: 7 for name in FEATURE_PACKAGES},  # features: over the core, reached by faces and the assembly
    "assembly": 8,
    "aws": 8,
    "cli": 9,
    "ui": 9,
    "hooks": 9,
    "evaluation": 9,
}
FACE_FLOOR = 9
# modules that are faces inside a lower package: entry points run by a person, an agent or a schedule
FACE_MODULES = (
    "episodic.__main__",
    "episodic.mcp.http_server",
    "episodic.mcp.stdio",
    "episodic.harvest.runner",
    "episodic.dream.hook",  # the SessionEnd hook's dream trigger
    *(f"episodic.{name}.cli" for name in FEATURE_PACKAGES),
)
# the imports allowed to go up a floor, and why (the ceiling: 14)
UPWARD = {
    ("episodic.kernel.feature_contract", "episodic.mcp.registry"): "a feature declares its MCP tools with "
    "the registry's ToolSpec type",
    (
        "episodic.sessions.scope_source",
        "episodic.cards.present",
    ): "the scope summary counts sessions by the one "
    "pluralisation rule every count a person reads follows (`counted`)",
}


def floor_of(name: str) -> int:
    if name.startswith("lambdas.") or _in(name, list(FACE_MODULES)):
        return FACE_FLOOR
    parts = name.split(".")
    return 0 if len(parts) == 1 else FLOORS[parts[1]]


def upward_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (name, t) for name, targets in graph.items() for t in targets if floor_of(name) < floor_of(t)
    )


def test_every_package_has_a_floor_and_says_what_it_may_import() -> None:
    packages = sorted(p.parent.name for p in (SHARED / "episodic").glob("*/__init__.py"))
    assert sorted(FLOORS) == packages
    for package in packages:
        doc = ast.get_docstring(ast.parse((SHARED / "episodic" / package / "__init__.py").read_text()))
        assert doc and "May import" in doc, package


def test_no_import_goes_up_a_floor_but_the_listed_ones() -> None:
    upward = upward_imports(module_graph(with_lambdas=True))
    assert len(upward) <= 14
    assert [pair for pair in upward if pair not in UPWARD] == []


def test_a_planted_upward_import_is_found() -> None:
    graph = module_graph(with_lambdas=True)
    graph["episodic.store.sqlite"] = graph["episodic.store.sqlite"] | {"episodic.cards.present"}
    assert ("episodic.store.sqlite", "episodic.cards.present") in upward_imports(graph)


def test_the_package_root_holds_only_the_entry_modules() -> None:
    assert sorted(p.name for p in (SHARED / "episodic").glob("*.py")) == ["__init__.py", "__main__.py"]


def test_the_floor_script_prints_the_listed_upward_imports_and_passes() -> None:
    import subprocess
    import sys

    script = SHARED.parent / "scripts" / "import_floors.py"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(UPWARD)} upward of " in done.stdout


def test_a_module_over_450_lines_says_why_at_its_top() -> None:
    long = []
    for path in sorted((SHARED / "episodic").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text)) or ""
        if len(text.splitlines()) > 450 and "Over 450 lines" not in doc:
            long.append(str(path.relative_to(SHARED)))
    assert long == []
