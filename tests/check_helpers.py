"""Helpers shared by the analysis-check tests."""

from __future__ import annotations

import dataclasses

from stabsim import theory


def verdicts(rec) -> dict:
    """{(key, label): verdict} of an ``analyse`` record (which must not carry an error)."""
    assert rec["error"] is None, rec["error"]
    return {(r["key"], r["label"]): r["verdict"] for r in rec["rows"]}


def shrink_bounds(monkeypatch, keys, factor=1e-3):
    """Make ``theory.get`` return the registered bound scaled by ``factor`` for ``keys``
    (a deliberately wrong bound, which a check must then report as violated)."""
    orig = theory.get

    def get(key):
        b = orig(key)
        if key not in keys:
            return b
        f = b.func
        return dataclasses.replace(b, func=lambda **kw: f(**kw) * factor)

    monkeypatch.setattr(theory, "get", get)
