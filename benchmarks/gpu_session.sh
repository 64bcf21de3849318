#!/usr/bin/env bash
# The GPU backend's checks on a machine with an NVIDIA GPU, in one go (docs/gpu.md, "On a GPU"):
#
#   0. optionally (NCU_S > 0) Nsight Compute's report of one launch (benchmarks/gpu_profile.py);
#   1. the CUDA tests on the device (every kernel kind agrees with the CPU to GPU_RTOL, with the
#      same replaced indices; the specialised builds too), beside
#   2. optionally (SUITE_S > 0) the quick suite with --backend cuda (compare its verdicts and
#      data.nc with a CPU run afterwards, on any machine: benchmarks/compare_suites.py);
#   3. benchmarks/bench_gpu.py --tune: P1 Alg. 1 with the first TUNE_ROWS builds of the kernel
#      (general, specialised, per-thread iterates, register caps, block sizes), alone;
#   4. benchmarks/bench_gpu.py on the workloads (ns per replicate-step against the CPU on all
#      cores and JAX), alone, so that nothing else competes with its GPU, CPU and JAX rows.
#
# 1 and 2 run side by side (both mostly compile on the CPU: 16 cores).  Each step has a time
# limit (seconds, from the environment); what a step finished is kept when it is cut
# (bench_gpu.py saves after every row).  At most 8 files come back from a lent machine, so the
# environment goes into steps.log and the tune's log into bench.log.
#
#   bash benchmarks/gpu_session.sh OUTDIR        (PYTHON, JAX_PYTHON: interpreters; default python3;
#                                                 TESTS: the tests to run; TEST_WORKERS: processes)
set -u
OUT=${1:?usage: gpu_session.sh OUTDIR}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
JAXPY=${JAX_PYTHON:-$PY}
WORK=$(mktemp -d)
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/steps.log"; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  echo "cpu cores: $(nproc)"
  "$PY" - <<'PYEOF'
import importlib, sys
print("python", sys.version.split()[0])
for name in ("numpy", "numba", "llvmlite", "numba_cuda", "jax", "xarray", "dask", "distributed", "h5netcdf",
             "dp_accounting", "scipy", "hypothesis", "pytest"):
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "?"))
    except Exception as exc:
        print(name, "MISSING", type(exc).__name__, exc)
PYEOF
} >> "$OUT/steps.log" 2>&1
stamp "environment recorded"

# 0. optionally (NCU_S > 0, seconds per build) Nsight Compute on one launch of the default and the
#    general build (benchmarks/gpu_profile.py): the stall reasons of what bounds the kernel.  Only
#    the text report of each comes back ($OUT/ncu_<build>.txt: a device session returns 8 files).
if [ "${NCU_S:-0}" -gt 0 ]; then
  for build in default general; do
    flag=""; [ "$build" = general ] && flag=--general
    timeout "$NCU_S" "${NCU:-ncu}" --set full --kernel-name regex:kernel --launch-skip 1 --launch-count 1 -f \
        -o "$WORK/ncu_$build" "$PY" benchmarks/gpu_profile.py $flag > "$OUT/ncu_$build.txt" 2>&1
    "${NCU:-ncu}" --import "$WORK/ncu_$build.ncu-rep" --page details >> "$OUT/ncu_$build.txt" 2>&1
    stamp "ncu $build done"
  done
fi

if [ "${SUITE_S:-0}" -gt 0 ]; then
  ( timeout "$SUITE_S" "$PY" -m stabsim.cli run suite --quick --backend cuda --no-progress \
        --out "$WORK/quick_cuda" > "$OUT/suite.log" 2>&1
    echo "exit $?" >> "$OUT/suite.log" ) &
  suite=$!
fi
# (the offline PTX compile test is left out: on a GPU every kind compiles for the device itself)
# one process per test (pytest-xdist, where installed): each test compiles its own GPU kernels
# (15-25 s each, one core), so on one process the file took longer than its step (session 14)
XDIST=$("$PY" -c "import xdist" 2>/dev/null && echo "-n ${TEST_WORKERS:-8}")
STABSIM_TEST_GPU=1 STABSIM_NO_WARMUP=1 timeout "${TESTS_S:-270}" "$PY" -m pytest -p no:cacheprovider -v -rA $XDIST \
    --durations=15 ${TESTS:-tests/test_cuda_backend.py} \
    --deselect tests/test_cuda_backend.py::test_every_kind_compiles_for_the_gpu > "$OUT/tests.log" 2>&1
echo "exit $?" >> "$OUT/tests.log"
stamp "tests done: $(tail -1 "$OUT/tests.log")"
if [ "${SUITE_S:-0}" -gt 0 ]; then
  wait "$suite"
  stamp "suite done: $(tail -1 "$OUT/suite.log")"
  if [ -d "$WORK/quick_cuda" ]; then   # the numbers and reports, not the figures
    tar czf "$OUT/quick_cuda.tgz" -C "$WORK" --exclude='*.png' --exclude='*.pdf' quick_cuda
  fi
fi

if [ "${TUNE_S:-270}" -gt 0 ]; then
  timeout "${TUNE_S:-270}" "$PY" benchmarks/bench_gpu.py --workloads --tune "${TUNE_R:-262144}" \
      --tune-rows "${TUNE_ROWS:-8}" --repeat 2 --out "$OUT/tune.json" --results "$WORK/tune.md" > "$OUT/bench.log" 2>&1
  echo "tune exit $?" >> "$OUT/bench.log"
  stamp "tune done: $(tail -1 "$OUT/bench.log")"
fi

stamp "benchmark starts"
timeout "${BENCH_S:-200}" "$PY" benchmarks/bench_gpu.py --jax-python "$JAXPY" \
    --workloads ${BENCH_W:-p1_alg1 sgd_pair p4_alg1} --replicates ${BENCH_R:-65536 262144} \
    --cpu-replicates "${BENCH_CPU_R:-1024}" --repeat 2 \
    --out "$OUT/results_gpu.json" --results "$WORK/gpu_section.md" >> "$OUT/bench.log" 2>&1
echo "bench exit $?" >> "$OUT/bench.log"
stamp "benchmark done: $(tail -1 "$OUT/bench.log")"
