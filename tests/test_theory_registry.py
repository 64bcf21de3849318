"""The theorem registry's shape: a leaf module that the paper modules fill."""

from pathlib import Path


def test_the_registry_is_a_leaf():
    """stabsim.theory.registry imports no paper module (the papers fill it; theory/__init__ imports them)."""
    import ast

    src = (Path(__file__).resolve().parents[1] / "stabsim" / "theory" / "registry.py").read_text()
    imported = {a.name for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)
                for a in n.names}
    assert not imported & {"p0", "p1", "p2", "p3", "p4"}
    from stabsim.theory.registry import get
    assert get("P0.Thm2.rate").paper == "P0"
