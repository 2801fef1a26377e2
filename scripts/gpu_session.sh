#!/usr/bin/env bash
# One device call that runs every GPU measurement, in two parallel streams (one per GPU when the
# machine has two; both on GPU 0 otherwise — timing takes a per-GPU lock, so timings never overlap).
#   bash scripts/gpu_session.sh      (on the device machine; .whl carried; .kb carried for KernelBench)
# Logs land in $OUT (at most 8 files come back); JSON goes to /tmp/kg.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}; J=/tmp/kg; mkdir -p "$OUT" "$J"
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || exit 1
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
{ date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$OUT/env.log"
if [[ $gpus -ge 2 ]]; then
  KERNELGYM_NO_SANDBOX=1 timeout 120 python3 scripts/multi_gpu_throughput.py --rounds 1 --reps 10 \
    --out $J/mgt.json >> "$OUT/env.log" 2>&1
  A=0; B=1
else
  echo "one GPU: no multi-GPU throughput" >> "$OUT/env.log"; A=0; B=0
fi
( export CUDA_VISIBLE_DEVICES=$A
  timeout 70 python3 scripts/sandbox_probe.py > "$OUT/probe.log" 2>&1
  KERNELGYM_NO_SANDBOX=1 timeout 330 python3 -m pytest -q -m gpu tests/gpu -p no:cacheprovider -rA \
    --timeout 150 > "$OUT/gpu-tests.log" 2>&1 ) &
( export CUDA_VISIBLE_DEVICES=$B KERNELGYM_NO_SANDBOX=1
  timeout 140 python3 scripts/gpu_bench.py --reps 20 --out $J/bench.json > "$OUT/bench.log" 2>&1
  timeout 130 python3 scripts/kernelbench_compare.py --kb .kb/src --tasks math/add,normalization/softmax \
    --out $J/kb.json > "$OUT/kb.log" 2>&1
  timeout 120 kernelgym suite check --device cuda --suite triton --shapes dev,heldout --no-timing --jobs 8 \
    --json $J/suite.json > "$OUT/suite.log" 2>&1 ) &
wait
python3 - <<'PY' > "$OUT/summary.log" 2>&1
import json, pathlib
for name in ("mgt", "bench", "kb"):
    p = pathlib.Path("/tmp/kg") / f"{name}.json"
    if p.exists():
        d = json.loads(p.read_text())
        print(name, json.dumps({k: v for k, v in d.items() if k != "rows"}, default=str)[:3000])
PY
echo done
