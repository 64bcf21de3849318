"""Theorem registry: every bound of the five papers as a function (see ``registry``).

>>> import stabsim.theory as t
>>> print(t.table())          # key, tag, quantity, reference, reading
>>> t.get("P1.Thm4.uas")(t=100, n=50, eta=0.1, G=1.0)
>>> t.get("P1.Thm4.uas").requires.describe()   # where it applies (stabsim.theory.assumptions)
"""
from stabsim.theory.assumptions import Assumptions
from stabsim.theory.registry import PAPERS, QUANTITIES, TAGS, Bound, get, list_bounds, register, register_custom, table

# The registry is a leaf that the paper modules fill when they are imported (here, once), so it
# never imports them back: no import cycle.
from stabsim.theory import p0, p1, p2, p3, p4  # noqa: E402,F401

__all__ = ["Assumptions", "PAPERS", "QUANTITIES", "TAGS", "Bound", "get", "list_bounds", "register", "register_custom", "table"]
