"""P1 (Yang et al. 2021) Sec. 6 on real data: the reproduction check of Table 1 (test AUC of five
methods) and Figure 1 (CPU time vs AUC).

Check ``p1_table1`` (kind ``p1_table1``; study ``p1_table1``; errata P1-D)
    Reproduction comparison with P1 Table 1 (the paper's numbers copied verbatim from the
    paper, errata P1-D): per data set and method, the mean +- std over replicates of the
    test AUC of the final output against the paper's mean +- std; verdict "consistent" iff
    |ours - paper| <= 0.02 + 2 x (paper's std), a tolerance fixed before any run,
    "inconsistent" only when |ours - paper| exceeds it by more than 1.96 standard errors of our
    mean, else "inconclusive".  Also per
    data set: P1's two qualitative claims, "Alg. 1 is competitive" (its mean AUC within
    0.01 + 2 x its std of the best method's mean) and Figure 1's "OLP and OAM_gra need
    more CPU time than Alg. 1 and SGD_pair" (mean CPU time of the final run).  Figures:
    ``table1_auc.png`` (ours vs paper) and ``fig1_cpu_auc.png`` (mean test AUC against mean
    CPU time along the checkpoints, log time axis, as P1 Figure 1).
"""

from __future__ import annotations

import math

import numpy as np

from stabsim.setups.p1 import METHOD_LABELS, METHOD_NAMES, PAPER_NAME
from stabsim.judging.rules import Verdict
from stabsim.registry import register_check
from stabsim.analyses.base import CheckResult


#: P1 Table 1 (mean, std), verbatim from the paper (seed 001, Sec. 6).
PAPER_TABLE1 = {
    "p1_alg1": {"diabetes": (.831, .030), "german": (.793, .021), "ijcnn1": (.934, .002), "letter": (.810, .007),
                "mnist": (.932, .001), "usps": (.926, .006)},
    "sgd_pair": {"diabetes": (.830, .028), "german": (.794, .023), "ijcnn1": (.934, .003), "letter": (.811, .008),
                 "mnist": (.932, .001), "usps": (.925, .006)},
    "olp": {"diabetes": (.825, .028), "german": (.787, .028), "ijcnn1": (.916, .003), "letter": (.808, .010),
            "mnist": (.927, .003), "usps": (.917, .006)},
    "oam_gra": {"diabetes": (.828, .026), "german": (.785, .029), "ijcnn1": (.930, .003), "letter": (.806, .008),
                "mnist": (.898, .002), "usps": (.916, .005)},
    "spauc": {"diabetes": (.828, .031), "german": (.799, .026), "ijcnn1": (.932, .002), "letter": (.809, .008),
              "mnist": (.927, .002), "usps": (.923, .005)},
}


TOL_ABS, TOL_SD = 0.02, 2.0
COMPETITIVE_ABS, COMPETITIVE_SD = 0.01, 2.0


# ---- the check ----------------------------------------------------------------------------------

def _cell_values(spec, ds):
    """[(dataset, method, sub-dataset)] over the cells present."""
    from stabsim.analyses.base import sweep_slices

    out = []
    for _label, params, sub in sweep_slices(spec, ds):
        out.append((params["data"]["dataset"], params["algorithm"]["method"], sub))
    return out


def _cell_stats(cells) -> dict:
    """Per (data set, method): mean, std and count of the final output's test AUC over the replicates,
    the paper-style max of the mean AUC curve, the mean CPU time and curves, the chosen step
    constants, T, n_train and the passes."""
    stats = {}
    for name, method, sub in cells:
        final = sub["auc"].isel(ck=-1).values
        curve = sub["auc"].mean("replicate").values
        stats[(name, method)] = {
            "mean": float(np.mean(final)), "std": float(np.std(final)), "R": int(final.size),
            "paper_style": float(np.max(curve)),
            "cpu": float(sub["cpu"].isel(ck=-1).mean()), "cpu_curve": sub["cpu"].mean("replicate").values,
            "auc_curve": curve, "c": sub["c_chosen"].values, "T": int(sub["T"]), "n_train": int(sub["n_train"]),
            "passes": float(sub["passes"]), "cv_passes": float(sub["cv_passes"]),
        }
    return stats


def _table_row(res, spec, stats, meths, name, method, stand, fig_t):
    """P1 Table 1, one REPRO row: our mean +- std of the test AUC of (data set, method) against the
    paper's (tolerance TOL_ABS + TOL_SD x the paper's std); returns the markdown table's row."""
    pname = PAPER_NAME[name]
    st = stats[(name, method)]
    pm, psd = PAPER_TABLE1[method][pname]
    diff = st["mean"] - pm
    tol = TOL_ABS + TOL_SD * psd
    ok = abs(diff) <= tol
    # "inconsistent" is a claim: |diff| must exceed the tolerance by more than 1.96 of our mean's SE
    se = st["std"] / math.sqrt(st["R"]) if st["R"] > 1 else math.inf
    verdict = "consistent" if ok else ("inconsistent" if abs(diff) - tol > 1.96 * se else "inconclusive")
    notes = (f"ours {st['mean']:.3f} +- {st['std']:.3f} (R = {st['R']}, SE {se:.3g}), paper {pm:.3f} +- {psd:.3f}, "
             f"diff {diff:+.3f}, tolerance {tol:.3f}",
             f"T = {st['T']} ({st['passes']:g} passes over n_tr = {st['n_train']}), chosen c: "
             f"{_counts(st['c'])}")
    v = Verdict(key="P1.Table1", quantity="test AUC (mean over splits)", tag="REPRO",
                verdict=verdict, n_replicates=st["R"], level=0.95,
                worst_margin=tol - abs(diff), worst_at={"diff": round(diff, 4)}, notes=notes)
    expl = None
    if not ok:
        others = [stats[(name, m)]["mean"] for m in meths]
        expl = _miss_explanation(name, pname, method, diff, st, stand, (min(others), max(others)),
                                 spec.sections["algorithm"]["eta_grid"])
    label = f"{name}{' [stand-in for ' + pname + ']' if stand else ''} / {METHOD_LABELS[method]}"
    # compared with the paper's number: on a stand-in that number is context, not a reference value
    res.add(v, figure=fig_t, label=label, explanation=expl, data="stand-in" if stand else "real",
            stand_in_for=pname if stand else None)
    return (name, pname, stand, method, st, pm, psd, diff, tol, ok)


def _competitive_row(res, stats, meths, name, stand, fig_t):
    """P1 Sec. 6's claim "Alg. 1 is competitive" on one data set (CLAIM row): the best method's mean
    AUC is within COMPETITIVE_ABS + COMPETITIVE_SD x Alg. 1's std of Alg. 1's mean."""
    a = stats[(name, "p1_alg1")]
    best_m = max(meths, key=lambda m: stats[(name, m)]["mean"])
    gap = stats[(name, best_m)]["mean"] - a["mean"]
    tolc = COMPETITIVE_ABS + COMPETITIVE_SD * a["std"]
    ok = gap <= tolc
    b = stats[(name, best_m)]
    se_gap = math.sqrt(a["std"] ** 2 / a["R"] + b["std"] ** 2 / b["R"]) if min(a["R"], b["R"]) > 1 else math.inf
    verdict = "consistent" if ok else ("inconsistent" if gap - tolc > 1.96 * se_gap else "inconclusive")
    v = Verdict(key="P1.Sec6.competitive", quantity="best mean AUC - Alg. 1 mean AUC", tag="CLAIM",
                verdict=verdict, n_replicates=a["R"], level=0.95,
                worst_margin=tolc - gap, notes=(f"best: {METHOD_LABELS[best_m]} {stats[(name, best_m)]['mean']:.3f}; "
                                               f"Alg. 1 {a['mean']:.3f}; tolerance {tolc:.3f}",))
    res.add(v, figure=fig_t, label=name, data="stand-in" if stand else "real", explanation=None if ok else (
        f"Alg. 1 is {gap:.3f} below {METHOD_LABELS[best_m]} on {name}, more than 0.01 + 2 x its split std; "
        + ("stand-in data set; " if stand else "")
        + "scaled budget (fewer passes/repeats than the paper) and a 4-value step grid"))


def _cpu_row(res, stats, meths, name, stand, fig_c):
    """P1 Figure 1's claim "OLP and OAM_gra need more CPU time than Alg. 1 and SGD_pair" on one data
    set (CLAIM row, mean CPU time of the final run)."""
    buffered = [m for m in ("olp", "oam_gra") if m in meths]
    cheap = [m for m in ("p1_alg1", "sgd_pair") if m in meths]
    if buffered and cheap:
        slow = min(stats[(name, m)]["cpu"] for m in buffered)
        fast = max(stats[(name, m)]["cpu"] for m in cheap)
        ok = slow > fast
        v = Verdict(key="P1.Fig1.cpu", quantity="CPU time of the final run (mean)", tag="CLAIM",
                    verdict="consistent" if ok else "inconsistent", n_replicates=stats[(name, cheap[0])]["R"],
                    level=math.nan, worst_margin=slow - fast,
                    notes=("; ".join(f"{METHOD_LABELS[m]} {stats[(name, m)]['cpu']:.3g} s" for m in meths),))
        res.add(v, figure=fig_c, label=name, data="stand-in" if stand else "real", explanation=None if ok else (
            "the buffered methods were not slower at this size; at tiny T the per-call overhead dominates"))


def _add_notes(res, spec, rows, stats):
    """The markdown table, the tolerance, stand-in and step-size notes and the measured AUC / CPU time."""
    res.notes.append(_markdown_table(rows))
    res.notes.append(f"Tolerance (fixed before running): |ours - paper| <= {TOL_ABS} + {TOL_SD:g} x paper's std. "
                     "'Ours' = mean +- std over the replicates (outer folds) of the test AUC of the FINAL output, "
                     "with the step tuned on an inner hold-out of the training fold. 'paper-style' = the authors' "
                     "reporting (max over checkpoints of the mean test AUC; the authors' script also tuned on the "
                     "test fold), optimistic by construction.")
    res.notes.append("Stand-ins (no package ships the paper's files): satimage (class 4 vs rest, 9.7 % positives) "
                     "for ijcnn1, mnist5k (5000-image MNIST subset) for mnist, sklearn digits (8x8) for usps; their "
                     "Table 1 rows show the paper's number for context only (verdict 'stand-in (no paper value)', "
                     "the tolerance rule's verdict in the notes, left out of the headline counts); their qualitative "
                     "rows (competitive, CPU) are judged and marked data = stand-in.")
    res.notes.append("Step size eta = c / sqrt(T) constant (the authors' 'const' geometry), c from the grid "
                     f"{list(spec.sections['algorithm']['eta_grid'])}; radius {spec.sections['algorithm']['radius']:g} "
                     "for all methods (the paper tunes it too; fixed here to keep the grid small).")
    for (name, method), st in stats.items():
        res.measured[f"AUC {name}/{method}"] = round(st["mean"], 4)
        res.measured[f"CPU s {name}/{method}"] = round(st["cpu"], 4)


@register_check("p1_table1", description="P1 Table 1 / Fig. 1 reproduction: test AUC vs the paper, CPU time vs AUC")
def check_table1(spec, ds) -> CheckResult:
    """P1 Table 1 / Figure 1: REPRO rows per (data set, method) and the two CLAIM rows per data set."""
    from stabsim.engine import real_datasets as datasets

    res = CheckResult()
    cells = _cell_values(spec, ds)
    dsets = list(dict.fromkeys(c[0] for c in cells))
    meths = [m for m in METHOD_NAMES if any(c[1] == m for c in cells)]
    stats = _cell_stats(cells)
    fig_t = res.figure("table1_auc.png", _table_figure(stats, dsets, meths))
    fig_c = res.figure("fig1_cpu_auc.png", _cpu_figure(stats, dsets, meths))
    rows = []
    for name in dsets:
        stand = datasets._resolve(name).stand_in
        for method in meths:
            rows.append(_table_row(res, spec, stats, meths, name, method, stand, fig_t))
        # qualitative claims per data set
        if "p1_alg1" in meths and len(meths) > 1:
            _competitive_row(res, stats, meths, name, stand, fig_t)
        _cpu_row(res, stats, meths, name, stand, fig_c)
    _add_notes(res, spec, rows, stats)
    return res


# ---- text and figures ---------------------------------------------------------------------------

def _counts(c) -> str:
    """'c x count, ...' of the chosen step constants."""
    vals, cnt = np.unique(np.asarray(c, dtype=float), return_counts=True)
    return ", ".join(f"{v:g} x{k}" for v, k in zip(vals, cnt))


def _miss_explanation(name, pname, method, diff, st, stand, spread, grid) -> str:
    """Why a Table 1 row misses the paper's number: stand-in data, budget, late peak, grid edge, loss."""
    parts = [f"reproduction miss: ours - paper = {diff:+.3f}"]
    if stand:
        parts.append(f"{name} is a STAND-IN for the paper's {pname} (different data; the paper's number is not "
                     f"expected to transfer): all methods give {spread[0]:.3f}-{spread[1]:.3f} on {name}, so the "
                     "gap is the data set's, shared by every method")
    if st["passes"] < 10:
        parts.append(f"scaled budget: {st['passes']:g} passes instead of the authors' 10")
    if st["paper_style"] - st["mean"] > 0.005:
        parts.append(f"the curve peaks before the end: the paper's reporting (max over checkpoints of the mean "
                     f"test AUC) gives {st['paper_style']:.3f} here, diff {st['paper_style'] - (st['mean'] - diff):+.3f}")
    if method == "oam_gra" and st["paper_style"] - st["mean"] > 0.005:
        parts.append("OAM_gra's step C_t = c max(1, N_opp / N) multiplies an unnormalised sum over the buffer and "
                     "grows linearly in t, so its final average decays after a peak")
    c = np.asarray(st["c"], dtype=float)
    if np.mean((c == min(grid)) | (c == max(grid))) > 0.5:
        parts.append(f"the tuned step sits at the edge of the grid {list(grid)} in most splits")
    if method == "spauc":
        parts.append("SPAUC optimises the square loss, not the hinge")
    return "; ".join(parts)


def _markdown_table(rows) -> str:
    """The reproduction table (ours vs paper per data set and method) as markdown."""
    lines = ["P1 Table 1 reproduction (test AUC, mean +- std over replicates):", "",
             "| data (paper's) | method | ours | paper | diff | tol | paper-style ours | verdict |",
             "|---|---|---|---|---|---|---|---|"]
    for name, pname, stand, method, st, pm, psd, diff, tol, ok in rows:
        dn = f"{name} ({pname}{', STAND-IN' if stand else ''})"
        lines.append(f"| {dn} | {METHOD_LABELS[method]} | {st['mean']:.3f} +- {st['std']:.3f} | {pm:.3f} +- {psd:.3f} "
                     f"| {diff:+.3f} | {tol:.3f} | {st['paper_style']:.3f} | {'consistent' if ok else 'MISS'} |")
    return "\n".join(lines)


def _table_figure(stats, dsets, meths):
    """``table1_auc.png``: ours (o) vs the paper's (x) mean +- std test AUC per data set and method."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from stabsim.engine import real_datasets as datasets

    fig = Figure(figsize=(max(7.0, 1.7 * len(dsets)), 5.0), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(meths))
    colors = [f"C{i}" for i in range(len(meths))]
    for j, m in enumerate(meths):
        x = np.arange(len(dsets)) + (j - (len(meths) - 1) / 2) * width
        ours = [stats[(dn, m)]["mean"] for dn in dsets]
        osd = [stats[(dn, m)]["std"] for dn in dsets]
        pap = [PAPER_TABLE1[m][PAPER_NAME[dn]][0] for dn in dsets]
        psd = [PAPER_TABLE1[m][PAPER_NAME[dn]][1] for dn in dsets]
        ax.errorbar(x - width * 0.15, ours, yerr=osd, fmt="o", color=colors[j], label=f"{METHOD_LABELS[m]} (ours)")
        ax.errorbar(x + width * 0.15, pap, yerr=psd, fmt="x", color=colors[j], alpha=0.6,
                    label=f"{METHOD_LABELS[m]} (paper)")
    ax.set_xticks(np.arange(len(dsets)))
    ax.set_xticklabels([dn + ("*" if datasets._resolve(dn).stand_in else "") + f"\n({PAPER_NAME[dn]})"
                        for dn in dsets])
    ax.set_ylabel("test AUC (mean +- std)")
    ax.set_title("P1 Table 1: ours (o) vs paper (x); * = stand-in data set")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="x-small", ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.16), frameon=False)
    return fig


def _cpu_figure(stats, dsets, meths):
    """``fig1_cpu_auc.png``: mean test AUC against mean CPU time along the checkpoints (P1 Figure 1)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    ncol = min(3, len(dsets))
    nrow = int(math.ceil(len(dsets) / ncol))
    fig = Figure(figsize=(4.2 * ncol, 3.4 * nrow), layout="constrained")
    FigureCanvasAgg(fig)
    for i, dn in enumerate(dsets):
        ax = fig.add_subplot(nrow, ncol, i + 1)
        for j, m in enumerate(meths):
            st = stats[(dn, m)]
            t = np.maximum(st["cpu_curve"], 1e-6)
            ax.plot(t, st["auc_curve"], "-o", ms=3, color=f"C{j}", label=METHOD_LABELS[m])
        ax.set_xscale("log")
        ax.set_xlabel("CPU time (s, log scale)")
        ax.set_ylabel("test AUC")
        ax.set_title(f"{dn} ({PAPER_NAME[dn]})")
        ax.grid(True, alpha=0.3)
        if i == 0:
            ax.legend(fontsize="x-small")
    fig.suptitle("P1 Figure 1: CPU time vs AUC (mean over replicates, final run)")
    return fig
