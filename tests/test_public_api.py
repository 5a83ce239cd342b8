"""The package's public surface: what each module exports exists, every package says what it is
for, and every public exception class lives in toolscout.errors and in the tree its docstring draws."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import toolscout
from toolscout import errors

SOURCE = Path(toolscout.__file__).parent
# Packages whose modules need optional extras (e.g. torch) to import.
_OPTIONAL = ("toolscout.training",)


def _modules() -> list[str]:
    names = ["toolscout"]
    for info in pkgutil.walk_packages([str(SOURCE)], prefix="toolscout."):
        if not info.name.startswith(_OPTIONAL):
            names.append(info.name)
    return names


def _source_files() -> list[Path]:
    return sorted(p for p in SOURCE.rglob("*.py") if "__pycache__" not in p.parts)


def _packages() -> list[Path]:
    return sorted(p.parent for p in SOURCE.rglob("__init__.py") if "__pycache__" not in p.parts)


@pytest.mark.parametrize("name", _modules())
def test_every_name_a_module_exports_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", [])
    assert len(set(exported)) == len(exported), f"{name}.__all__ repeats a name"
    missing = [item for item in exported if not hasattr(module, item)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


@pytest.mark.parametrize("path", _source_files(), ids=lambda p: str(p.relative_to(SOURCE)))
def test_every_module_states_its_exports(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    stated = [
        node
        for node in tree.body
        if (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets))
        or (isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "__all__")
    ]
    assert len(stated) == 1, f"{path.relative_to(SOURCE)} does not state its exports in one __all__"
    value = stated[0].value
    assert isinstance(value, ast.List) and all(
        isinstance(item, ast.Constant) and isinstance(item.value, str) for item in value.elts
    ), f"{path.relative_to(SOURCE)}: __all__ is not a literal list of names"


def test_every_module_imports_on_its_own() -> None:
    """Importing any module first works: no import cycle depends on which module is loaded first."""
    script = (
        "import importlib, sys\n"
        "failed = []\n"
        "for name in sys.argv[1:]:\n"
        "    for loaded in [m for m in sys.modules if m == 'toolscout' or m.startswith('toolscout.')]:\n"
        "        del sys.modules[loaded]\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{name}: {exc!r}')\n"
        "print('\\n'.join(failed))\n"
    )
    result = subprocess.run([sys.executable, "-c", script, *_modules()], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert not result.stdout.strip(), f"modules that fail to import first:\n{result.stdout}"


@pytest.mark.parametrize("package", _packages(), ids=lambda p: p.name)
def test_every_package_says_in_one_line_what_it_is_for(package: Path) -> None:
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
    assert docstring and docstring.splitlines()[0].strip(), f"{package.name}/__init__.py has no purpose line"


def test_the_search_and_gateway_seams_are_exported() -> None:
    import toolscout.gateway
    import toolscout.search

    assert {"SearchEngine", "SearchHit", "SearchResponse", "SearchSettings", "ToolSearch"} <= set(toolscout.search.__all__)
    assert {"Gateway", "GatewayOptions"} <= set(toolscout.gateway.__all__)


def test_each_package_exports_its_entry_points() -> None:
    import toolscout.index
    import toolscout.registry
    import toolscout.security
    import toolscout.serving

    assert {"Query", "Retriever"} <= set(toolscout.index.__all__)
    assert {"ServerSpec", "load_registries"} <= set(toolscout.registry.__all__)
    assert {"PinScreen", "PoisoningScreen", "PinStore"} <= set(toolscout.security.__all__)
    assert {"build_server", "http_app", "serve_http"} <= set(toolscout.serving.__all__)


def test_every_public_exception_class_lives_in_errors_and_in_its_drawn_tree() -> None:
    outside = []
    for path in SOURCE.rglob("*.py"):
        if path.name == "errors.py" and path.parent == SOURCE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                if bases & {"Exception", "ValueError", "RuntimeError", "LookupError"} or any(
                    b.endswith("Error") or b.endswith("Fault") for b in bases
                ):
                    outside.append(f"{path.relative_to(SOURCE)}: {node.name}")
    assert not outside, f"public exception classes outside errors.py: {outside}"
    drawn = errors.__doc__ or ""
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert inspect.isclass(cls) and issubclass(cls, errors.ToolscoutError)
        assert name in drawn, f"{name} is missing from the tree in errors.py's docstring"
