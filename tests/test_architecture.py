"""The house rules, checked on the source (no import of stabsim needed).

* experiments (study kinds) and analyses (checks) never import each other, at module level or
  inside a function, and neither imports the study runner, nor the runner either of them: the
  three meet in ``stabsim.registry``, which imports none of them;
* the package has no import circle at module level (what Python executes on import);
* no module is over 600 lines and no function over 120 lines, but for ``LONG_FUNCTIONS``;
* every path ``docs/architecture.md`` names exists.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "stabsim"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 120
#: the functions allowed over MAX_FUNCTION_LINES: the twin kernel's replicate builder and the
#: replicate nested in it, which numba compiles as one function (its kind a closure constant)
LONG_FUNCTIONS = {"stabsim.kernels.twin_replicate.build_replicate", "stabsim.kernels.twin_replicate.replicate"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(mod: str, is_pkg: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(mod: str, path: Path, top_level_only: bool) -> set[str]:
    """The stabsim modules ``mod`` imports (``from X import y`` counts X, and X.y when that is a module)."""
    known = _modules()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    if top_level_only:  # module level, including inside if/try blocks at module level
        nodes = [n for stmt in tree.body for n in ast.walk(stmt)
                 if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    out = set()
    for n in nodes:
        if isinstance(n, ast.Import):
            out.update(a.name for a in n.names if a.name.startswith("stabsim"))
        elif isinstance(n, ast.ImportFrom):
            target = _resolve(mod, path.name == "__init__.py", n)
            if not target.startswith("stabsim"):
                continue
            out.add(target)
            out.update(f"{target}.{a.name}" for a in n.names if f"{target}.{a.name}" in known)
    return {m for m in out if m in known}


def _in(mod: str, package: str) -> bool:
    return mod == package or mod.startswith(package + ".")


def test_experiments_and_analyses_do_not_import_each_other():
    bad = []
    for mod, path in _modules().items():
        for imp in _imports(mod, path, top_level_only=False):
            if _in(mod, "stabsim.experiments") and (_in(imp, "stabsim.analyses") or _in(imp, "stabsim.checks")):
                bad.append(f"{mod} imports {imp}")
            if _in(mod, "stabsim.analyses") and (_in(imp, "stabsim.experiments") or _in(imp, "stabsim.checks")):
                bad.append(f"{mod} imports {imp}")
    assert not bad, "an experiment and an analysis import each other:\n" + "\n".join(sorted(bad))


def test_study_experiments_and_analyses_meet_only_in_the_registry():
    packages = ("stabsim.study", "stabsim.experiments", "stabsim.analyses")
    bad = []
    for mod, path in _modules().items():
        own = next((p for p in packages + ("stabsim.registry",) if _in(mod, p)), None)
        if own is None:
            continue
        for imp in _imports(mod, path, top_level_only=False):
            bad += [f"{mod} imports {imp}" for p in packages if p != own and _in(imp, p)]
    assert not bad, "study, experiments, analyses and the registry import one another:\n" + "\n".join(sorted(bad))


def test_the_rule_sees_a_violation(tmp_path):
    """The walker resolves relative imports (so the rule above is not vacuous)."""
    mods = _modules()
    mod = next(m for m in mods if m.startswith("stabsim.experiments."))
    fake = tmp_path / "x.py"
    fake.write_text("def f():\n    from ..analyses.base import CheckResult\n")
    imps = _imports(mod, fake, top_level_only=False)
    assert "stabsim.analyses.base" in imps
    assert "stabsim.analyses.base" not in _imports(mod, fake, top_level_only=True)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_at_module_level():
    mods = _modules()
    graph = {}
    for mod, path in mods.items():
        deps = _imports(mod, path, top_level_only=True)
        # a package's __init__ importing its own submodules (or a submodule importing its package's
        # __init__ for a re-exported name) is the normal package pattern, not a circle between modules
        graph[mod] = {d for d in deps if d != mod and not _in(d, mod) and not _in(mod, d)}
    cyc = _cycles(graph)
    assert not cyc, "import circles at module level:\n" + "\n".join(" <-> ".join(c) for c in cyc)


def test_modules_and_functions_are_short():
    long_modules, long_functions = [], []
    for mod, path in _modules().items():
        text = path.read_text(encoding="utf-8")
        n = text.count("\n") + 1
        if n > MAX_MODULE_LINES:
            long_modules.append(f"{mod}: {n} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES and f"{mod}.{node.name}" not in LONG_FUNCTIONS:
                    long_functions.append(f"{mod}.{node.name}: {length} lines")
    assert not long_modules, "modules over 600 lines:\n" + "\n".join(long_modules)
    assert not long_functions, "functions over 120 lines:\n" + "\n".join(long_functions)


def test_architecture_doc_names_only_existing_paths():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    paths = set(re.findall(r"`((?:stabsim|studies|tests|docs|benchmarks|reports)/[\w./-]*)`", doc))
    assert len(paths) >= 20, "docs/architecture.md should name where things are"
    missing = [p for p in sorted(paths) if not (ROOT / p.rstrip("/")).exists()]
    assert not missing, "docs/architecture.md names paths that do not exist: " + ", ".join(missing)


# ---------------------------------------------------------------------------------------------
# Floors.  A module imports (at module level or inside a function) only modules of its own floor
# or of lower floors; the longest matching prefix decides a module's floor.  docs/architecture.md
# draws the same table.
FLOORS = {
    "stabsim.compile": 0,            # numba's cache, njit, pipelines, compile-beside, warm-up
    "stabsim.runtime": 0,            # signals, thread pools, memory/disk, code identity, checksums
    "stabsim.engine.rng": 1,         # numba maths that the kernels inline
    "stabsim.engine.losses": 1,
    "stabsim.engine.constraints": 1,
    "stabsim.engine.steps": 1,
    "stabsim.engine.backend": 1,
    "stabsim.kernels": 2,            # the numba loops
    "stabsim.engine": 3,             # run_twin, neighbours, data sets, searches
    "stabsim.risk": 3,
    "stabsim.privacy": 3,            # accounting, private algorithms, audits
    "stabsim.theory": 3,             # the bounds
    "stabsim.judging": 4,            # measures, rates, verdict rules, figures
    "stabsim.registry": 5,           # kinds, checks, formula bounds; what experiments and analyses share
    "stabsim.setups": 5,
    "stabsim.experiments": 6,
    "stabsim.analyses": 6,
    "stabsim.study": 7,              # study files, grids, runs, resume, lanes
    "stabsim.reporting": 8,
    "stabsim.privacy.ledger": 8,     # reads a report's studies
    "stabsim.privacy.prefetch": 8,
    "stabsim.privacy.audit_cli": 8,
    "stabsim.cli": 9,
    "stabsim": 9,                    # the package's lazy public API (stabsim/__init__.py)
}
# Upward imports that are allowed, each with its reason.  Keep this short.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def floor_of(mod: str) -> int:
    best = max((p for p in FLOORS if _in(mod, p)), key=len)
    return FLOORS[best]


def _graph(top_level_only: bool) -> dict[str, set[str]]:
    mods = _modules()
    # a submodule importing its own package (a re-exported name) is Python's package pattern; the
    # package's __init__ importing its submodules is an edge like any other
    return {mod: {d for d in _imports(mod, path, top_level_only) if d != mod and not _in(mod, d)}
            for mod, path in mods.items()}


def test_every_module_has_a_floor_of_its_own():
    """A new module at the package root must be placed in the table, not fall into the catch-all."""
    loose = [m for m in _modules() if m.count(".") == 1 and not any(p == m or _in(m, p) for p in FLOORS if p != "stabsim")]
    assert not loose, "modules at the package root without a floor in FLOORS: " + ", ".join(sorted(loose))


def test_no_import_loop_even_inside_functions():
    cyc = _cycles(_graph(top_level_only=False))
    assert not cyc, "import loops (function-local imports included):\n" + "\n".join(" <-> ".join(c) for c in cyc)


def test_no_upward_import():
    up = []
    for mod, deps in _graph(top_level_only=False).items():
        for d in deps:
            if floor_of(d) > floor_of(mod) and (mod, d) not in ALLOWED_UPWARD:
                up.append(f"{mod} (floor {floor_of(mod)}) imports {d} (floor {floor_of(d)})")
    assert not up, "upward imports:\n" + "\n".join(sorted(up))


def test_the_floor_rule_sees_a_violation(tmp_path):
    fake = tmp_path / "x.py"
    fake.write_text("def f():\n    from stabsim.study import run\n")
    imps = _imports("stabsim.kernels.twin", fake, top_level_only=False)
    assert "stabsim.study" in imps and floor_of("stabsim.study") > floor_of("stabsim.kernels.twin")
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]


def test_architecture_doc_draws_every_floor():
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [p for p in FLOORS if p != "stabsim" and f"`{p.replace('.', '/')}" not in doc]
    assert not missing, "docs/architecture.md does not place: " + ", ".join(missing)
