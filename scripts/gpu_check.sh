#!/usr/bin/env bash
# Everything that needs a GPU, in one call on the H200 machine (device tool, carry .whl):
#   bash scripts/gpu_check.sh [tests|bench|suite|ptx|all]
# Writes logs and JSON under $OUT (or ./gpu-out). Record what it printed in docs/benchmarks.md.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
what=${1:-all}
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
if ! python3 -c "import gymnasium" 2>/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >"$OUT/install.log" 2>&1 || {
  cat "$OUT/install.log"; exit 1; }
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/env.txt"
rc=0
if [[ $what == tests || $what == all ]]; then
  python3 -m pytest -q -m gpu tests -p no:cacheprovider -rA 2>&1 | tee "$OUT/gpu-tests.log" | tail -60
  rc=$(( rc | ${PIPESTATUS[0]} ))
fi
if [[ $what == bench || $what == all ]]; then
  python3 scripts/gpu_bench.py --out "$OUT/bench.json" 2>&1 | tee "$OUT/bench.log" | tail -40
  rc=$(( rc | ${PIPESTATUS[0]} ))
fi
if [[ $what == ptx || $what == all ]] && [[ -f scripts/gpu_ptx_check.py ]]; then
  python3 scripts/gpu_ptx_check.py 2>&1 | tee "$OUT/ptx.log" | tail -40
  rc=$(( rc | ${PIPESTATUS[0]} ))
fi
if [[ $what == suite ]]; then
  kernelgym suite check --device cuda --suite triton --jobs "${JOBS:-6}" --json "$OUT/suite.json" 2>&1 \
    | tee "$OUT/suite.log" | tail -60
  rc=$(( rc | ${PIPESTATUS[0]} ))
fi
exit $rc
