"""The house drawn from the imports: which room may use which, and what the serving path loads.

Each package of src/toolscout is a room, and each module at the top of the package is one too.
A room may import only rooms of a lower floor, so no two rooms import each other:

    commands, cli        the command line (training and evaluation only here)
    app                  the one place that assembles the application
    serving              the MCP face
    gateway              the gateway over upstreams and search
    oauth, training      signing in to remote upstreams (over their transports); fitting models
    upstream, security, eval
    search
    index, registry, learning
    state                the state store, and toolscout's own state files
    json_files, secrets  helpers every room may use
    errors, catalog, naming, wording, printable, toolscout/__init__
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import toolscout

PACKAGE = Path(toolscout.__file__).parent

FLOORS = [
    {"<root>", "errors", "catalog", "naming", "wording", "printable"},
    {"json_files", "secrets"},
    {"state"},
    {"index", "registry", "learning"},
    {"search"},
    {"upstream", "security", "eval"},
    {"oauth", "training"},
    {"gateway"},
    {"serving"},
    {"dashboard"},
    {"app"},
    {"commands", "cli"},
    {"__main__"},
]
FLOOR = {room: number for number, rooms in enumerate(FLOORS) for room in rooms}

# The one import against the direction, and why it is not a loop: a model folder with weights but
# no .onnx file is exported on first use (with the train extra installed), and the exporter it
# reaches imports nothing of toolscout's (asserted below).
EXCEPTIONS = {("toolscout.index.dense", "toolscout.training.onnx_export")}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every toolscout module `path` imports, at the top or inside a function."""
    module = _module_name(path)
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            # `from package import module` imports that module, not the package's __init__.
            found.update(f"{name}.{a.name}" if _is_module(f"{name}.{a.name}") else name for a in node.names)
    return {name for name in found if name == "toolscout" or name.startswith("toolscout.")}


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _room(module: str) -> str:
    parts = module.split(".")
    return "<root>" if len(parts) == 1 else parts[1]


def _edges() -> dict[tuple[str, str], list[str]]:
    """(importing room, imported room) -> the module imports that make that edge."""
    edges: dict[tuple[str, str], list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        for imported in _imports(path):
            if (module, imported) in EXCEPTIONS:
                continue
            pair = (_room(module), _room(imported))
            if pair[0] != pair[1]:
                edges.setdefault(pair, []).append(f"{module} -> {imported}")
    return edges


def test_every_room_of_the_package_is_on_a_floor():
    rooms = {_room(_module_name(path)) for path in PACKAGE.rglob("*.py")}
    assert rooms - FLOOR.keys() == set(), "put each new package or top module on a floor above"


def test_rooms_import_only_rooms_of_a_lower_floor():
    upward = [
        f"{' ; '.join(lines)} (floor {FLOOR[a]} -> floor {FLOOR[b]})"
        for (a, b), lines in _edges().items()
        if FLOOR[a] <= FLOOR[b]
    ]
    assert upward == []


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """A path that comes back to where it began, from each node of `graph` that has one."""
    finished: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in finished:
            return None
        for nxt in sorted(graph.get(node, ())):
            loop = visit(nxt, [*path, node])
            if loop:
                return loop
        finished.add(node)
        return None

    return [loop for node in sorted(graph) if (loop := visit(node, []))]


def test_no_two_rooms_import_each_other_through_any_path():
    graph: dict[str, set[str]] = {}
    for a, b in _edges():
        graph.setdefault(a, set()).add(b)
    assert _loops(graph) == []


def _module_imports() -> dict[str, set[str]]:
    """Module -> the toolscout modules it imports (at the top, inside a function or for type checking)."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        module = _module_name(path)
        graph[module] = {name for name in _imports(path) if name != module and _is_module(name)}
    return graph


def test_no_module_imports_itself_back_through_any_path():
    """Within a room too (the dashboard's pages and their site, the gateway and its views): a
    module that needs a type of a module importing it takes a Protocol of its own instead."""
    assert _loops(_module_imports()) == []


def test_the_top_of_the_package_holds_at_most_nine_modules():
    top = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem not in ("__init__", "__main__"))
    assert len(top) <= 9, top


# Functions allowed past 60 lines because they are one flat table (rows of data, no logic), by
# module name and function name. Empty: every function fits.
FLAT_TABLES: set[tuple[str, str]] = set()


def test_no_file_over_500_lines_and_no_function_over_60():
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        module = _module_name(path)
        if len(text.splitlines()) > 500:
            too_long.append(f"{module}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                lines = node.end_lineno - start + 1  # type: ignore[operator]
                if lines > 60 and (module, node.name) not in FLAT_TABLES:
                    too_long.append(f"{module}.{node.name}: {lines} lines")
    assert too_long == []


def test_the_onnx_exporter_the_runtime_may_reach_imports_nothing_of_toolscout():
    assert _imports(PACKAGE / "training" / "onnx_export.py") == set()


def _loaded_after(code: str) -> list[str]:
    """The modules of training, evaluation and torch a fresh interpreter holds after `code`."""
    probe = (
        f"{code}\nimport sys\n"
        "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', "
        "'sentence_transformers') or m.startswith(('toolscout.training', 'toolscout.eval')))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.split()


def test_assembling_the_application_loads_no_training_evaluation_or_torch():
    assert _loaded_after("import toolscout.app") == []


def test_the_command_line_of_serve_loads_no_training_evaluation_or_torch():
    code = (
        "from toolscout import cli\n"
        "args = cli.build_parser(cli._command_in(['serve'])).parse_args(['serve'])\n"
        "assert args.handler.__module__ == 'toolscout.commands.serve'\n"
        "import toolscout.commands.serve, toolscout.serving.server, toolscout.serving.http"
    )
    assert _loaded_after(code) == []
