"""benchmarks/bench_gpu.py runs end to end (in numba's CUDA simulator here: tests/conftest.py) and
writes its section of RESULTS.md between its markers, leaving the rest of the file alone.  Its
timings are not looked at (they mean nothing in the simulator)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import bench_gpu  # noqa: E402
import early_children  # noqa: E402

ON_GPU = os.environ.get("STABSIM_TEST_GPU") == "1"


def smoke_run(folder):
    """The smoke run the first test checks, writing into ``folder``: (its result, RESULTS.md, gpu.json)."""
    md = Path(folder) / "RESULTS.md"
    md.write_text("# Benchmark results\n\nkept text\n")
    out = Path(folder) / "gpu.json"
    argv = ["--smoke", "--workloads", "p1_alg1", "--out", str(out), "--results", str(md), "--tune", "8"]
    return bench_gpu.main(argv), md, out


#: In the simulator the smoke run's --tune compiles the specialised builds of P1 Alg. 1 for the
#: CPU (20-40 s from an empty cache): a child started with the session (tests/early_children.py)
#: does the same run first, on the otherwise idle core, so that the test loads them from numba's
#: cache.  Not on a GPU, where the builds are compiled for the device in each process.
EARLY_CHILDREN = () if ON_GPU else ("smoke",)


def early_child(key, folder):
    code = f"import sys; sys.path[:0] = [{str(Path(__file__).parent)!r}]; " \
           f"import test_bench_gpu_script as m; m.smoke_run({str(folder)!r})"
    return [sys.executable, "-c", code], {**os.environ, "STABSIM_NO_WARMUP": "1"}


def test_bench_gpu_smoke_run_writes_its_section(tmp_path):
    if EARLY_CHILDREN:
        (tmp_path / "early").mkdir()
        done, _ = early_children.results(sys.modules[__name__], tmp_path / "early")
        assert done["smoke"].returncode == 0, done["smoke"].stderr[-3000:]
    res, md, out = smoke_run(tmp_path)
    agree = res["workloads"]["p1_alg1"]["agreement"]
    assert agree["indices_identical"]
    device = json.loads(out.read_text())["device"]
    if ON_GPU:   # docs/gpu.md: rounding differences only
        assert agree["dist_iterate"] <= 1e-10 and agree["loss_path"] <= 1e-10
        assert not device.startswith("numba CUDA simulator")
    else:   # the simulator runs the CPU's compiled replicate: identical numbers
        assert agree["dist_iterate"] == 0.0 and agree["loss_path"] == 0.0
        assert device.startswith("numba CUDA simulator")
    # the run saved the section after each of its 3 tune rows, after the workload and at the end:
    # each save replaced it instead of adding one
    text = md.read_text()
    assert text.startswith("# Benchmark results\n\nkept text\n")
    assert text.count(bench_gpu.MARK_BEGIN) == 1 and text.count(bench_gpu.MARK_END) == 1
    assert "| p1_alg1 | cuda | 8 |" in text
    # --tune: the general, specialised and per-thread-iterates builds, and the knobs back at their defaults
    import stabsim.kernels.twin_cuda as tc
    assert [(r["specialized"], r["local_max_p"], r["max_registers"], r["threads_per_block"])
            for r in res["tune"]] == bench_gpu.TUNE_ROWS[:3]   # the three builds (--smoke)
    assert tc.MAX_REGISTERS is None and tc.THREADS_PER_BLOCK == 128 and tc.SPECIALIZE is None and tc.LOCAL_MAX_P == 12
    assert tc.cuda_kernel.__wrapped__   # the lru_cache'd builder is back
    assert "| no | no | ptxas | 128 | 8 |" in text and "| yes | yes | ptxas | 128 | 8 |" in text


def test_hand_written_kernel_computes_what_run_twin_computes():
    """benchmarks/gpu_minimal.py, the hand-written P1 Alg. 1 kernel the generic one is measured
    against, draws the same indices and makes the same steps: ||w_T - w'_T|| equal to run_twin's
    on the CPU (in the simulator bit for bit; on a GPU to rounding), and its --scan runs."""
    import gpu_minimal

    res = gpu_minimal.main(["--smoke", "--no-stabsim"])
    assert res["min_distance"] > 0.0   # every replicate's runs have parted: a comparison of numbers
    if os.environ.get("STABSIM_TEST_GPU") == "1":
        assert res["max_rel_diff_vs_cpu"] <= 1e-10
    else:
        assert res["max_rel_diff_vs_cpu"] == 0.0
    rows = gpu_minimal.scan([(8, 20)])
    assert len(rows[0]["launch_ns"]) == 1 and rows[0]["call_ns"] > 0


def test_gpu_profile_script_runs_both_builds_and_restores_the_knob():
    """benchmarks/gpu_profile.py (the launch Nsight Compute profiles) runs the default and the
    general build (here in the simulator) and leaves ``twin_cuda.SPECIALIZE`` as it found it."""
    import gpu_profile

    import stabsim.kernels.twin_cuda as tc

    for argv in (["--replicates", "4", "--T", "20"], ["--replicates", "4", "--T", "20", "--general"]):
        assert gpu_profile.main(argv) > 0
        assert tc.SPECIALIZE is None


def test_run_all_keeps_the_marked_sections_when_it_rewrites_results(tmp_path):
    """``run_all.write_md`` regenerates RESULTS.md but keeps the sections other scripts maintain
    (the GPU section written by bench_gpu, the issue-#17 table), in their order."""
    import run_all  # noqa: E402

    path = tmp_path / "RESULTS.md"
    bench_gpu.write_section(path, "<!-- gpu -->\nGPU numbers\n<!-- /gpu -->\n")
    path.write_text("old body\n" + path.read_text() + "<!-- issue17 -->\nside by side\n<!-- /issue17 -->\n")
    kept = run_all.kept_sections(path)
    assert [k.splitlines()[1] for k in kept] == ["GPU numbers", "side by side"]
    assert run_all.kept_sections(tmp_path / "absent.md") == []


def test_compare_suites_reports_verdicts_and_relative_differences(tmp_path):
    """benchmarks/compare_suites.py: equal verdicts and a last-digit difference pass; a changed
    verdict fails; the measured CPU seconds of P1 Table 1 are not compared."""
    import numpy as np
    import xarray as xr

    import compare_suites

    def study(root, name, values, verdict, cpu=0.0):
        d = root / name
        d.mkdir(parents=True)
        xr.Dataset({"x": ("i", np.asarray(values, float)), "k": ("i", np.arange(3)),
                    "cpu": ("i", np.full(3, cpu))}).to_netcdf(d / "data.nc", engine="h5netcdf")
        (d / "analysis.json").write_text(json.dumps({"rows": [{"key": "A.Thm1", "verdict": verdict}]}))

    cpu, gpu = tmp_path / "cpu", tmp_path / "gpu"
    study(cpu, "s1", [1.0, 2.0, np.nan], "holds", cpu=1.0)
    study(gpu, "s1", [1.0, 2.0 * (1 + 1e-13), np.nan], "holds", cpu=7.0)
    study(cpu, "s2", [1.0, 1.0, 1.0], "holds")
    study(gpu, "s2", [1.0, 1.0, 1.0], "violated")
    study(cpu, "s3", [0.0, 0.0, 0.0], "holds")
    study(cpu, "s4", [np.inf, 1.0, 1.0], "holds")
    study(gpu, "s4", [np.inf, 1.0, np.nan], "holds")
    res = compare_suites.compare(cpu, gpu)
    rows = {s["study"]: s for s in res["studies"]}
    assert 5e-14 < rows["s1"]["max_rel_diff"] < 2e-13 and rows["s1"]["same_verdicts"]
    assert rows["s1"]["variable"] == "x" and 5e-14 < rows["s1"]["scaled_diff"] < 2e-13   # scale 2: same
    assert rows["s2"]["max_rel_diff"] == 0.0 and not rows["s2"]["same_verdicts"]
    assert rows["s4"]["differ_in_kind"] == ["x (NaN or infinity in one run only)"]
    assert res["verdicts_differ"] == ["s2"] and res["missing"] == ["s3 (only in first)"]
    assert compare_suites.main([str(cpu), str(gpu)]) == 1
    text = compare_suites.markdown(res)
    assert "3 studies in both runs; verdicts identical in 2" in text and "verdicts differ: s2" in text
