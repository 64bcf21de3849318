#!/usr/bin/env bash
# What bounds the CUDA twin kernel (issue #22), in one call of a lent GPU machine:
#
#   1. benchmarks/gpu_minimal.py: the hand-written P1 Alg. 1 kernel against twin_cuda's kernel, same
#      workload, same R and T, same process (agreement with the CPU first), alone on the GPU;
#   2. Nsight Compute (--set full) on one launch of each, with the per-instruction (SASS) source page:
#      stall reasons, executed instructions, cache hit rates (benchmarks/gpu_profile.py);
#   3. beside 2, the GPU tests (every kernel kind against the CPU, GPU_RTOL), one process per test.
#
#   bash benchmarks/gpu_diagnose.sh OUTDIR      (PYTHON: interpreter, default python3; *_S: step limits)
set -u
OUT=${1:?usage: gpu_diagnose.sh OUTDIR}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
NCU=${NCU:-ncu}
WORK=$(mktemp -d)
export PYTHONUNBUFFERED=1 STABSIM_NO_WARMUP=1
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 )) s] $*" | tee -a "$OUT/steps.log"; }
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  echo "cpu cores: $(nproc)"
  "$PY" -c "import sys, numpy, numba, numba_cuda; print(sys.version.split()[0], 'numpy', numpy.__version__, 'numba', numba.__version__, 'numba-cuda', numba_cuda.__version__)"
  "$NCU" --version | tail -1
} >> "$OUT/steps.log" 2>&1
stamp "environment recorded"

timeout "${MIN_S:-150}" "$PY" benchmarks/gpu_minimal.py --T "${MIN_T:-20000}" --replicates ${MIN_R:-65536 262144} \
    --out "$OUT/minimal.json" > "$OUT/minimal.log" 2>&1
echo "exit $?" >> "$OUT/minimal.log"
stamp "hand-written vs twin_cuda: $(grep -E 'ns per|difference' "$OUT/minimal.log" | tr '\n' ';')"

XDIST=$("$PY" -c "import xdist" 2>/dev/null && echo "-n ${TEST_WORKERS:-8}")
( STABSIM_TEST_GPU=1 STABSIM_NO_WARMUP=1 timeout "${TESTS_S:-240}" "$PY" -m pytest -p no:cacheprovider -v -rA $XDIST \
      --durations=10 tests/test_cuda_backend.py tests/test_bench_gpu_script.py \
      --deselect tests/test_cuda_backend.py::test_every_kind_compiles_for_the_gpu > "$OUT/tests.log" 2>&1
  echo "exit $?" >> "$OUT/tests.log" ) &
tests=$!

for build in ${NCU_BUILDS:-default minimal}; do
  flag=""; R=33792
  [ "$build" = general ] && flag=--general
  [ "$build" = minimal ] && { flag=--minimal; R=84480; }
  timeout "${NCU_S:-120}" "$NCU" --set full --clock-control none --kernel-name regex:'kernel|twin_p1' \
      --launch-skip 1 --launch-count 1 -f -o "$WORK/ncu_$build" "$PY" benchmarks/gpu_profile.py $flag \
      --replicates $R --T "${NCU_T:-2000}" > "$OUT/ncu_$build.txt" 2>&1
  "$NCU" --import "$WORK/ncu_$build.ncu-rep" --page details >> "$OUT/ncu_$build.txt" 2>&1
  "$NCU" --import "$WORK/ncu_$build.ncu-rep" --page source --csv --print-source sass > "$WORK/sass_$build.csv" 2>&1
  gzip -c "$WORK/sass_$build.csv" > "$OUT/sass_$build.csv.gz"
  stamp "ncu $build done"
done
wait "$tests"
stamp "tests done: $(grep -cE 'PASSED' "$OUT/tests.log") passed, $(grep -cE 'FAILED|ERROR' "$OUT/tests.log") failed/errors; $(tail -1 "$OUT/tests.log")"
