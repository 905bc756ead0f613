"""``ksched.framework.api`` is exactly what docs/plugins.md tells plugin authors to import: every import
line of the doc's Python blocks names that module only, each name is in its ``__all__``, and together
they import all of it. The example plugin imports nothing else from ksched."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ksched.framework import api

ROOT = Path(__file__).resolve().parent.parent
PLUGINS_DOC = ROOT / "docs" / "plugins.md"
EXAMPLE = (
    ROOT / "examples" / "plugins" / "ksched-example-plugin" / "src" / "ksched_example_plugin" / "__init__.py"
)
FACADE = "ksched.framework.api"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def ksched_imports(source: str) -> list[tuple[str, str]]:
    """``(module, name)`` of every import of a ksched module in ``source`` (``name`` "" for ``import m``)."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ksched":
            found.extend((node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names if alias.name.split(".")[0] == "ksched")
    return found


def doc_imports(markdown: str) -> list[tuple[str, str]]:
    return [imp for block in PYTHON_BLOCK.findall(markdown) for imp in ksched_imports(block)]


def test_the_doc_imports_only_the_facade_and_all_of_it() -> None:
    imports = doc_imports(PLUGINS_DOC.read_text())
    assert imports, "docs/plugins.md shows no import lines"
    assert [imp for imp in imports if imp[0] != FACADE] == []
    names = {name for _, name in imports}
    assert names - set(api.__all__) == set(), (
        "imported in docs/plugins.md but not in ksched.framework.api.__all__"
    )
    assert set(api.__all__) - names == set(), (
        "in ksched.framework.api.__all__ but not shown in docs/plugins.md"
    )


def test_every_facade_name_exists() -> None:
    assert [name for name in api.__all__ if not hasattr(api, name)] == []
    assert len(api.__all__) == len(set(api.__all__))


def test_the_example_plugin_imports_only_the_facade() -> None:
    imports = ksched_imports(EXAMPLE.read_text())
    assert imports and {module for module, _ in imports} == {FACADE}
    assert {name for _, name in imports} <= set(api.__all__)


def test_the_check_catches_another_module() -> None:
    text = (
        "```python\nfrom ksched.framework.status import Status\nimport ksched.plugins\nimport msgspec\n```\n"
    )
    assert doc_imports(text) == [("ksched.framework.status", "Status"), ("ksched.plugins", "")]
