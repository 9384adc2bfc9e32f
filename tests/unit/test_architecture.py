"""The layering of the tree: protocol is the wire, config is shared configuration, the front
never reaches into the worker, and no package imports in a circle.

Imports are read from the source (module level and inside functions, since a lazy import that
dodges a cycle is still one); imports under `if TYPE_CHECKING:` are annotations only and do
not count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "config", "mcp_front", "rag_worker")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {
    _module_name(path): path for package in PACKAGES for path in sorted((PROJECT_ROOT / package).rglob("*.py"))
}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement under `node`, skipping the bodies of `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield from _import_nodes(other)
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        else:
            yield from _import_nodes(child)


def imported_names(module: str) -> set[str]:
    path = MODULES[module]
    return imports_in(path.read_text(), module if path.name == "__init__.py" else module.rpartition(".")[0])


def imports_in(source: str, package: str) -> set[str]:
    """The dotted names a module of `package` imports (resolved when relative; `from a import b`
    gives `a.b` when that is a module of ours, else `a`)."""
    names: set[str] = set()
    for node in _import_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            names.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return names


GRAPH: dict[str, set[str]] = {
    module: {name for name in imported_names(module) if name in MODULES and name != module} for module in MODULES
}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(GRAPH[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def _top(name: str) -> str:
    return name.split(".")[0]


def violations(package: str, forbidden: set[str]) -> list[str]:
    return sorted(
        f"{module} imports {name}"
        for module in MODULES
        if _top(module) == package
        for name in imported_names(module)
        if _top(name) in forbidden
    )


def test_the_modules_are_found() -> None:
    assert {"protocol", "config.settings", "mcp_front.server", "rag_worker.context", "rag_worker.app"} <= set(MODULES)


def test_no_module_imports_in_a_circle() -> None:
    assert _cycles() == []


def test_protocol_is_the_wire_only_and_imports_no_other_package_of_ours() -> None:
    assert violations("protocol", {"config", "mcp_front", "rag_worker"}) == []


@pytest.mark.parametrize("package", ["mcp_front", "config"])
def test_the_front_and_shared_configuration_never_import_the_worker_or_lightrag(package: str) -> None:
    # config is imported by the front, so LightRAG there would load it in the front too.
    assert violations(package, {"rag_worker", "lightrag"}) == []


def test_configuration_never_imports_the_front() -> None:
    assert violations("config", {"mcp_front"}) == []


def test_function_level_imports_count_and_type_checking_ones_do_not() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from rag_worker.context import WorkerRuntime\n"
        "def open_workspace() -> None:\n"
        "    from ..storage import engine\n"
    )
    assert imports_in(source, "rag_worker.operations") == {"typing", "rag_worker.storage.engine"}
