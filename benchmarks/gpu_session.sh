#!/usr/bin/env bash
# The GPU backend's checks on a machine with an NVIDIA GPU, in one go (docs/gpu.md, "On a GPU"):
#
#   1. the CUDA tests on the device (every kernel kind agrees with the CPU to GPU_RTOL, with the
#      same replaced indices);
#   2. the quick suite with --backend cuda (its verdicts and data.nc are compared with a CPU run
#      afterwards, on any machine: benchmarks/compare_suites.py);
#   3. benchmarks/bench_gpu.py (ns per replicate-step against the CPU on all cores and JAX, and
#      the kernel's knobs with --tune), alone, after 1 and 2, so that nothing else runs beside it.
#
# 1 and 2 run side by side: both spend most of their time compiling on the CPU.  Each step has a
# time limit (seconds, from the environment) so the whole script ends within about
# SETUP + max(TESTS_S, SUITE_S) + BENCH_S; what a step finished is kept when the next one is cut.
#
# On an H200 with 16 host cores (2026-11-26, docs/gpu.md) 280 s for the tests and 300 s for the
# suite were too short side by side (22 of 23 tests, 64 of 70 studies): give them 420 s each
# where the time allows (TESTS_S=420 SUITE_S=420).
#
#   bash benchmarks/gpu_session.sh OUTDIR        (PYTHON, JAX_PYTHON: interpreters; default python3)
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
  "$PY" - <<'EOF'
import importlib, sys
print("python", sys.version.split()[0])
for name in ("numpy", "numba", "llvmlite", "numba_cuda", "jax", "xarray", "dask", "distributed", "h5netcdf",
             "dp_accounting", "scipy", "hypothesis", "pytest"):
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "?"))
    except Exception as exc:
        print(name, "MISSING", type(exc).__name__, exc)
EOF
} > "$OUT/env.txt" 2>&1
stamp "environment recorded"

stamp "suite and tests start"
( timeout "${SUITE_S:-300}" "$PY" -m stabsim.cli run suite --quick --backend cuda --no-progress \
      --out "$WORK/quick_cuda" > "$OUT/suite.log" 2>&1
  echo "exit $?" >> "$OUT/suite.log" ) &
suite=$!
# (the offline PTX compile test is left out: on a GPU every kind compiles for the device itself)
STABSIM_TEST_GPU=1 STABSIM_NO_WARMUP=1 timeout "${TESTS_S:-280}" "$PY" -m pytest -p no:cacheprovider -rA \
    --durations=15 tests/test_cuda_backend.py tests/test_bench_gpu_script.py \
    --deselect tests/test_cuda_backend.py::test_every_kind_compiles_for_the_gpu > "$OUT/tests.log" 2>&1
echo "exit $?" >> "$OUT/tests.log"
stamp "tests done: $(tail -1 "$OUT/tests.log")"
wait "$suite"
stamp "suite done: $(tail -1 "$OUT/suite.log")"
if [ -d "$WORK/quick_cuda" ]; then   # the numbers and reports, not the figures
  tar czf "$OUT/quick_cuda.tgz" -C "$WORK" --exclude='*.png' --exclude='*.pdf' quick_cuda
fi

stamp "benchmark starts"
timeout "${BENCH_S:-240}" "$PY" benchmarks/bench_gpu.py --jax-python "$JAXPY" \
    --replicates ${BENCH_R:-4096 65536 262144} --cpu-replicates "${BENCH_CPU_R:-1024}" --repeat 2 \
    --tune "${TUNE_R:-262144}" --out "$OUT/results_gpu.json" --results "$OUT/gpu_section.md" > "$OUT/bench.log" 2>&1
echo "exit $?" >> "$OUT/bench.log"
stamp "benchmark done: $(tail -1 "$OUT/bench.log")"
