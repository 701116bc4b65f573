"""The layers of server/topicforest, read from the source (AST): engine → store → workspace →
server, each importing only its own layer and those below, and no import cycles; and no module
reads or writes another object's or module's private names (`x._name` where `x` is not `self`,
`cls` or `super()`; `from m import _name`).

An import inside `if TYPE_CHECKING:` counts for the layers (a type is a dependency) but not for
cycles (it never runs). Imports inside functions count for both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "topicforest"
# Module prefix → layer; a module takes the longest prefix that names it.
LAYERS = {
    "topicforest.engine": 0,
    "topicforest.attachments": 0,  # the attachment model, shared by store and workspace
    "topicforest.store": 1,
    "topicforest.workspace": 2,
    "topicforest.server": 3,
    # the MCP server: a client layer beside the language server, over the same workspace verbs
    "topicforest.mcp": 3,
    # tools on top of everything: command line, demo, evaluation, test doubles
    "topicforest": 4,
}
LAYER_NAMES = {0: "engine", 1: "store", 2: "workspace", 3: "server", 4: "tools"}
WIRE_ONLY = ("pygls", "lsprotocol")  # only the server layer may import these
MCP_SDK = "mcp"  # only topicforest.mcp may import the MCP SDK
# (module, expression) of private accesses allowed, each with its reason: third-party objects only
PRIVATE_EXEMPT: dict[tuple[str, str], str] = {}


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer(module: str) -> int:
    best = max((p for p in LAYERS if module == p or module.startswith(p + ".")), key=len)
    return LAYERS[best]


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.Module, module: str, is_package: bool) -> Iterator[tuple[str, bool]]:
    """(imported module, runs at run time) for every import statement in `tree`."""
    package = module if is_package else module.rpartition(".")[0]

    def visit(node: ast.AST, runtime: bool) -> Iterator[tuple[str, bool]]:
        if isinstance(node, ast.If) and _type_checking(node.test):
            for child in node.body:
                yield from visit(child, False)
            for child in node.orelse:
                yield from visit(child, runtime)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, runtime
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            yield base, runtime
            for alias in node.names:
                yield f"{base}.{alias.name}", runtime  # `from pkg import module`
        for child in ast.iter_child_nodes(node):
            yield from visit(child, runtime)

    yield from visit(tree, True)


def graph(root: Path) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[str]]]:
    """(every edge, run-time edges, third-party imports) between the modules under `root`."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in files}
    runtime: dict[str, set[str]] = {m: set() for m in files}
    external: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for target, runs in imports(tree, module, path.name == "__init__.py"):
            if target in files and target != module:
                edges[module].add(target)
                if runs:
                    runtime[module].add(target)
            elif not target.startswith(root.name):
                external[module].add(target.split(".")[0])
    return edges, runtime, external


def private_uses(root: Path) -> list[tuple[str, str]]:
    """(module, expression) of every use of a private name of another object or module."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and not _own(node.value):
                found.append((module, ast.unparse(node)))
            elif isinstance(node, ast.ImportFrom):
                found += [(module, f"from {node.module} import {a.name}")
                          for a in node.names if _private(a.name)]  # fmt: skip
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _own(value: ast.expr) -> bool:
    """`self`, `cls` or `super()`: the object's own names."""
    if isinstance(value, ast.Name):
        return value.id in ("self", "cls")
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "super"
    )


def upward(edges: Mapping[str, set[str]]) -> list[str]:
    return [
        f"{source} ({LAYER_NAMES[layer(source)]}) imports {target} ({LAYER_NAMES[layer(target)]})"
        for source, targets in sorted(edges.items())
        for target in sorted(targets)
        if layer(target) > layer(source)
    ]


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                connect(target)
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

    for node in sorted(edges):
        if node not in index:
            connect(node)
    return found


def test_no_module_imports_a_layer_above_it() -> None:
    edges, _, _ = graph(PACKAGE)
    assert upward(edges) == []


def test_no_import_cycles() -> None:
    _, runtime, _ = graph(PACKAGE)
    assert cycles(runtime) == []


def test_only_the_server_layer_imports_pygls() -> None:
    _, _, external = graph(PACKAGE)
    below = {
        module: sorted(external[module] & set(WIRE_ONLY))
        for module in external
        if layer(module) < LAYERS["topicforest.server"]
    }
    assert {m: libs for m, libs in below.items() if libs} == {}


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def test_the_mcp_layer_stands_beside_the_language_server() -> None:
    """`topicforest.mcp` and `topicforest.server` are two clients of the workspace layer: neither
    imports the other; only the first imports the MCP SDK, and it imports no pygls."""
    edges, _, external = graph(PACKAGE)
    crossing = [
        f"{source} imports {target}"
        for source, targets in edges.items()
        for target in targets
        for a, b in (("topicforest.mcp", "topicforest.server"),
                     ("topicforest.server", "topicforest.mcp"))
        if in_package(source, a) and in_package(target, b)
    ]  # fmt: skip
    assert crossing == []
    sdk = sorted(
        m for m in external if MCP_SDK in external[m] and not in_package(m, "topicforest.mcp")
    )
    assert sdk == []
    wire = sorted(
        m for m in external if in_package(m, "topicforest.mcp") and external[m] & set(WIRE_ONLY)
    )
    assert wire == []


def test_no_module_uses_another_objects_private_names() -> None:
    used = private_uses(PACKAGE)
    assert [use for use in used if use not in PRIVATE_EXEMPT] == []
    assert [use for use in PRIVATE_EXEMPT if use not in used] == []  # no stale exemption


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("class A:\n    def f(self, o):\n        return o._x\n", ["o._x"]),
        ("def f(w):\n    w._y = 1\n", ["w._y"]),
        ("from topicforest.store.state import _set_meta\n",
         ["from topicforest.store.state import _set_meta"]),
        ("import os\nos._exit(0)\n", ["os._exit"]),
        ("class A(B):\n    def f(self):\n        super()._g()\n        return self._h, cls._i\n",
         []),
        ("class A:\n    def __eq__(self, o):\n        return o.__dict__\n", []),
    ],
)  # fmt: skip
def test_the_private_check_catches_what_it_is_for(
    tmp_path: Path, source: str, expected: list[str]
) -> None:
    root = tmp_path / "topicforest"
    root.mkdir()
    (root / "m.py").write_text(source, encoding="utf-8")
    assert [expression for _, expression in private_uses(root)] == expected


@pytest.mark.parametrize(
    ("sources", "problem"),
    [
        (
            {
                "engine/a.py": "from topicforest.workspace import b\n",
                "workspace/b.py": "",
            },
            "upward",
        ),
        (
            {
                "server/x.py": "from topicforest.server import y\n",
                "server/y.py": "def f():\n    from . import x\n",
            },
            "cycle",
        ),
    ],
)
def test_the_checks_catch_what_they_are_for(
    tmp_path: Path, sources: dict[str, str], problem: str
) -> None:
    root = tmp_path / "topicforest"
    for name, text in {**sources, "__init__.py": ""}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(text, encoding="utf-8")
    edges, runtime, _ = graph(root)
    assert bool(upward(edges)) == (problem == "upward")
    assert bool(cycles(runtime)) == (problem == "cycle")
