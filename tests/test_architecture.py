"""The Python layer's structure, as rules a change cannot break silently
(issue 26; spec/CONVENTIONS.md, "Python estimator"):

- no module reaches into another object's private names: an attribute
  ``x._name`` is read or written only on ``self``, ``cls`` or a new
  instance of the class being defined (``cls()``), and no private name is
  imported from another module;
- no module writes (or reads) another object's ``__dict__``;
- the estimator keeps to the scikit-learn surface: under 300 lines.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "renewable_huber"
SOURCES = sorted(PACKAGE.rglob("*.py"))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _own_object(node: ast.expr) -> bool:
    """``self``, ``cls``, or ``cls(...)``: the object whose class is being defined."""
    if isinstance(node, ast.Name):
        return node.id in ("self", "cls")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cls"


def reach_ins(source: str) -> list[str]:
    """Where ``source`` touches another object's private attribute or ``__dict__``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and (node.attr == "__dict__" or _is_private(node.attr)):
            if not (_own_object(node.value) and (node.attr != "__dict__" or isinstance(node.value, ast.Name)
                                                 and node.value.id == "self")):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module not in ("__future__",):
            for alias in node.names:
                if _is_private(alias.name) and alias.name != "_version":
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
    return found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_reaches_into_another_objects_private_names(path):
    assert reach_ins(path.read_text()) == []


def test_the_rule_sees_what_it_forbids():
    """The checker itself: what dask.py did before issue 26, and what stays allowed."""
    forbidden = [
        "model._partitioned_update(like, transition)",
        "model.__dict__.update(fitted.__dict__)",
        "report.__dict__.update(outcome.__dict__)",
        "frame._meta.drop(columns=[])",
        "from .estimator import _Stream",
    ]
    for line in forbidden:
        assert reach_ins(line), line
    allowed = ["self._stream = stream", "self.__dict__ = attributes", "cls()._resume(payload, {})",
               "model.partial_fit(X, y)", "type(x).__name__"]
    for line in allowed:
        assert reach_ins(line) == [], line


def test_the_estimator_is_the_scikit_learn_surface_only():
    lines = (PACKAGE / "estimator.py").read_text().count("\n")
    assert lines < 300, f"estimator.py has {lines} lines"
