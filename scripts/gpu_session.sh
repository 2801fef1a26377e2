#!/usr/bin/env bash
# Every GPU test and measurement of warpgym, in one device call (10 minutes at most there):
#
#   bash scripts/gpu_session.sh [streams|scale|all|suite|trust|refsweep|kbside|quote|followup|stall|verify|bwdcheck|bwdsweep]   # carry .whl (gymnasium, pydantic), .kb, .sweep
#
# streams (the default): four streams at once, one GPU each where there are four (timing holds its
# GPU alone, so streams never disturb each other's timings): A the timing probes, `warpgym bench`,
# then the KernelBench comparison; B the sandbox probe then the GPU tests; C the GEMM sweep then
# every `ptx` reference through the evaluator; D the triton suite's references, timed, until the
# deadline (rows appended to suite.jsonl; SUITE_RESUME=path resumes an earlier call's file). With
# fewer GPUs they share.
# scale: the multi-GPU throughput (1, 2, 4, 8 GPUs as there are), then the suite on every GPU but
# the last, and the GPU tests on the last (SKIP=throughput goes straight to those). all: scale's
# throughput, then streams. SKIP="timing paired bench kb probe tests sweep ptx suite" leaves those steps
# out of streams (the suite then takes the GPU of a skipped stream C). With fewer than four GPUs,
# the suite runs after the tests, on GPU 1.
# GPU_TESTS="path or node id ..." picks the tests of stream B (default: tests/gpu tests/test_sandbox.py)
# and of scale (default: tests/gpu). While a suite runs, $OUT/watch.log records every 30 s the GPU
# locks (/proc/locks), each python process's state and kernel wait channel, and the GPUs' load.
# suite: the triton suite alone on every GPU. trust: the device-trace and Landlock probes, then the GPU
# tests of the trust layers (GPU_TESTS overrides which). tests: the sandbox probe (every layer on a CUDA
# worker), then GPU_TESTS (default: tests/gpu). paired: the timing-protocol probe, then the same
# candidates' speedups from five separate processes (scripts/paired_repeat.py; PARALLEL=N at once),
# then EXTRA (a command). SKIP=timing leaves the probe out; REPEAT_SECONDS (310) caps the five processes.
# followup: `warpgym eval --verbose` of the fp8 CUDA GEMM (where it stalls), paired_repeat.py (five processes) and
# `warpgym bench`'s first pass under the shipped defaults, then the TF32 probe on four convolution problems (.kb).
# testsuite: GPU_TESTS (default tests/gpu/test_timed_trace_gpu.py; none skips them), then SUITE_TASKS through
# `warpgym suite check` (SUITE_RESUME=path: an earlier call's rows, whose passing tasks are not checked again; watch.log as for the suite).
# bwdcheck: scripts/cuda_attention_bwd_check.py (the hand-written CUDA backward's variants: correct at every shape, time
# against cuDNN; BWD_SECONDS caps it; BWD_AB="1 7" times those variants, the shipped one and cuDNN side by side instead).
# bwdsweep: scripts/attention_bwd_sweep.py run .sweep-bwd (made here first by its emit; carry .sweep-bwd; MASKS="causal" times
# the causal task's variants only).
# verify: tests/gpu/test_executed_work_gpu.py (required instructions beside an FFMA product) and
# tests/gpu/test_profile_confined_gpu.py (ncu and compute-sanitizer behind the confined worker), then scripts/gpu_ptx_check.py
# (every ptx reference and its hand-written CUDA ones through the evaluator; PTX_TASKS picks tasks, VERIFY_TESTS the tests).
# evaltime: `warpgym bench`'s first pass (15 evaluations, evaluation time) ROUNDS times (2), each time first under
# OLD_TREE's code when given (a carried folder holding an earlier commit's files, e.g. `git archive 83bbd67^` for the
# cached-baseline protocol), then under this tree's; then PTX_TASKS through scripts/gpu_ptx_check.py, if set.
# stall: scripts/paired_repeat.py on PAIRS (default the matmul against cuBLAS) in PROCESSES (10) processes, then
# scripts/ncu_probe.py (where Nsight Compute stalls on the hand-written CUDA GEMM).
# quote: scripts/order_effect_probe.py, scripts/paired_repeat.py (five processes at once), then `warpgym bench`'s
# first pass (evaluation time), then EXTRA (SKIP="timing bench" leaves the probe or the bench out).
# serve: scripts/serve_throughput.py (8 clients through `warpgym serve` against in-process; .whl must
# hold fastapi, uvicorn, starlette, httpx and their dependencies). kbside: scripts/kernelbench_side_by_side.py
# (KB_LEVEL1, KB_LEVEL2 problems, KB_ARGS more options, KB_RESUME an earlier call's JSON to go on from;
# .kb carries KernelBench's src and KernelBench folders). refsweep: scripts/triton_ref_sweep.py (the rewritten
# Triton references, old and new and a few tile configs, against their baselines; < 5 minutes; SWEEP_SECONDS
# caps it), then SUITE_TASKS through `warpgym suite check` with the sweep's choices applied (GPU_TESTS first, if set).
# Logs land in $OUT (8 files at most come back); every JSON report is merged into $OUT/results.json.
set -uo pipefail
cd "$(dirname "$0")/.."
START=$SECONDS
DEADLINE=${DEADLINE:-570}
OUT=${OUT:-$PWD/gpu-out}; J=/tmp/kg; mkdir -p "$OUT" "$J"
export PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/dev/null 2>&1 || exit 1
left() { echo $(( DEADLINE - (SECONDS - START) )); }
cap() { local l; l=$(left); (( $1 < l )) && echo "$1" || echo $(( l > 5 ? l : 5 )); }
gpus=$(python3 -c "import torch; print(torch.cuda.device_count())")
{ date -u; nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "GPUs: $gpus"; } > "$OUT/env.log"

part=${1:-streams}
on() { [[ " ${SKIP:-} " != *" $1 "* ]]; }  # SKIP="probe sweep ptx kb ..." leaves those steps out
g() { echo $(( $1 % (gpus > 0 ? gpus : 1) )); }
watch() {  # every 30 s while the suite runs: who holds and who waits for the GPU locks, GPU load
  while sleep 30; do
    { echo "== $(( SECONDS - START )) s, $(wc -l < "$OUT/suite.jsonl" 2>/dev/null) rows"
      for f in /tmp/warpgym-gpu-*.lock /tmp/warpgym-gpu-*.gate; do [[ -e $f ]] && echo "$(stat -c %i "$f") $f"; done
      cat /proc/locks
      ps -eo pid,ppid,etimes,stat,wchan:28,args --sort=pid | grep -E "[p]ython|[w]arpgym" | cut -c1-170
      nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader
      nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader  # who holds the memory
    } >> "$OUT/watch.log" 2>&1
  done
}
suite() {  # suite GPUS JOBS: the triton suite's references, timed, resumable
  cp -n "${SUITE_RESUME:-/dev/null}" "$OUT/suite.jsonl" 2>/dev/null
  watch & local watcher=$!
  CUDA_VISIBLE_DEVICES=$1 timeout "$(cap 600)" warpgym suite check --device cuda --suite triton \
    --shapes dev,heldout --jobs "$2" --jsonl "$OUT/suite.jsonl" --markdown $J/suite.md
  kill $watcher
}

if [[ $part == scale || $part == all ]] && [[ $gpus -ge 2 ]] && on throughput; then
  counts=1,2; [[ $gpus -ge 4 ]] && counts=1,2,4; [[ $gpus -ge 8 ]] && counts=1,2,4,8
  timeout "$(cap 220)" python3 scripts/multi_gpu_throughput.py --counts $counts --rounds "${ROUNDS:-3}" --reps 10 \
    --out $J/multi_gpu.json >> "$OUT/env.log" 2>&1
fi
if [[ $part == scale ]]; then
  last=$(( gpus - 1 )); rest=$(seq -s, 0 $(( last > 0 ? last - 1 : 0 )))
  ( CUDA_VISIBLE_DEVICES=$last timeout "$(cap 330)" python3 -m pytest -q ${GPU_TESTS:--m gpu tests/gpu} \
      -p no:cacheprovider -rA --timeout 150 ) > "$OUT/B-probe-tests.log" 2>&1 &
  suite "$rest" $(( 4 * (last > 0 ? last : 1) )) > "$OUT/D-suite.log" 2>&1 &
  wait
fi
if [[ $part == suite ]]; then  # the triton suite alone, on every GPU, SUITE_JOBS evaluators each
  suite "$(seq -s, 0 $(( gpus > 0 ? gpus - 1 : 0 )))" $(( ${SUITE_JOBS:-4} * (gpus > 0 ? gpus : 1) )) \
    > "$OUT/D-suite.log" 2>&1
fi
if [[ $part == refsweep ]]; then  # Triton references old and new, a few tile configs, against their baselines
  # REFSWEEP_ARGS: more options of the script (--task T ..., --old-rev REV)
  # shellcheck disable=SC2086
  # SUITE_TASKS="task ...": then those references through `warpgym suite check` (checked and timed)
  # GPU_TESTS="path ...": those tests first (TESTS_SECONDS caps them)
  # shellcheck disable=SC2086
  [[ -n ${GPU_TESTS:-} ]] && CUDA_VISIBLE_DEVICES=$(g 0) timeout "$(cap ${TESTS_SECONDS:-200})" python3 -m pytest -q \
    $GPU_TESTS -p no:cacheprovider -rA --timeout 150 > "$OUT/T-gpu-tests.log" 2>&1
  CUDA_VISIBLE_DEVICES=$(g 0) timeout "$(cap ${SWEEP_SECONDS:-420})" python3 scripts/triton_ref_sweep.py \
    --out $J/triton_ref_sweep.json ${REFSWEEP_ARGS:-} > "$OUT/A-refsweep.log" 2>&1
  cp $J/triton_ref_sweep.json "$OUT/" 2>/dev/null
  if [[ -n ${SUITE_TASKS:-} ]]; then
    # the sweep's choices set first, so the suite check judges the configs it chose
    python3 scripts/triton_ref_sweep.py --apply $J/triton_ref_sweep.json > "$OUT/A-applied.log" 2>&1
    # shellcheck disable=SC2046
    CUDA_VISIBLE_DEVICES=$(g 0) timeout "$(cap 400)" warpgym suite check --device cuda --suite triton \
      --shapes dev --jobs "${SUITE_JOBS:-4}" \
      --jsonl "$OUT/suite.jsonl" $(printf -- '--task %s ' $SUITE_TASKS) > "$OUT/B-suite.log" 2>&1
  fi
fi
if [[ $part == testsuite ]]; then  # GPU_TESTS, then SUITE_TASKS through the suite check (SUITE_JOBS at once)
  export CUDA_VISIBLE_DEVICES=$(g 0)
  cp -n "${SUITE_RESUME:-/dev/null}" "$OUT/suite.jsonl" 2>/dev/null  # an earlier call's rows: passing ones are kept
  # shellcheck disable=SC2086
  [[ ${GPU_TESTS:-} != none ]] && timeout "$(cap ${TESTS_SECONDS:-200})" python3 -m pytest -q \
    ${GPU_TESTS:-tests/gpu/test_timed_trace_gpu.py} -p no:cacheprovider -rA -s --timeout 150 > "$OUT/A-gpu-tests.log" 2>&1
  watch & watcher=$!
  # shellcheck disable=SC2046
  timeout "$(cap 560)" warpgym suite check --device cuda --suite triton --shapes dev --jobs "${SUITE_JOBS:-6}" \
    --jsonl "$OUT/suite.jsonl" $(printf -- '--task %s ' $SUITE_TASKS) > "$OUT/B-suite.log" 2>&1
  kill $watcher
fi
if [[ $part == trust ]]; then  # the device evidence: probes, then every GPU test of the trust layers
  export CUDA_VISIBLE_DEVICES=$(g 0)
  timeout "$(cap 120)" python3 scripts/device_trace_probe.py --out $J/device_trace_probe.json \
    > "$OUT/A-trace-probe.log" 2>&1
  timeout "$(cap 120)" python3 scripts/landlock_cuda_probe.py --out $J/landlock_cuda.json > "$OUT/B-landlock.log" 2>&1
  timeout "$(cap 420)" python3 -m pytest -v ${GPU_TESTS:-tests/gpu/test_trust_gpu.py tests/gpu/test_adversarial_gpu.py \
    tests/gpu/test_timed_trace_gpu.py tests/gpu/test_gpu_core.py} -p no:cacheprovider -rA --timeout 150 \
    > "$OUT/C-trust-tests.log" 2>&1
fi
if [[ $part == tests ]]; then  # the sandbox on CUDA workers, then the GPU tests
  export CUDA_VISIBLE_DEVICES=$(g 0)
  OUT=$J timeout "$(cap 90)" python3 scripts/sandbox_probe.py > "$OUT/A-sandbox-probe.log" 2>&1
  timeout "$(cap 480)" python3 -m pytest -q ${GPU_TESTS:-tests/gpu} -p no:cacheprovider -rfEs --timeout 200 \
    2>&1 | tee "$OUT/B-gpu-tests.log" | tail -40
fi
if [[ $part == paired ]]; then  # which timing protocol repeats, and whether a speedup repeats across processes
  export CUDA_VISIBLE_DEVICES=$(g 0)
  on timing && timeout "$(cap 200)" python3 scripts/paired_timing_probe.py --out $J/paired_timing_probe.json \
    > "$OUT/A-paired-probe.log" 2>&1
  timeout "$(cap $(( ${REPEAT_SECONDS:-310} + 10 )))" python3 scripts/paired_repeat.py --out "$OUT/paired_repeat.json" \
    --parallel "${PARALLEL:-1}" --timeout "$(cap "${REPEAT_SECONDS:-310}")" > "$OUT/B-paired-repeat.log" 2>&1
  [[ -n ${EXTRA:-} ]] && timeout "$(cap 300)" bash -c "$EXTRA" > "$OUT/C-extra.log" 2>&1
fi
if [[ $part == quote ]]; then  # whether a speedup repeats: the order effect, five processes, evaluation time
  export CUDA_VISIBLE_DEVICES=$(g 0)
  on timing && timeout "$(cap 150)" python3 scripts/order_effect_probe.py --out "$OUT/order_effect.json" \
    > "$OUT/A-order-effect.log" 2>&1
  timeout "$(cap 320)" python3 scripts/paired_repeat.py --out "$OUT/paired_repeat.json" --parallel 5 \
    --timeout "$(cap 310)" > "$OUT/B-paired-repeat.log" 2>&1
  on bench && timeout "$(cap 150)" warpgym bench --device cuda --cold 1 --spread 0 --no-ncu \
    --out "$OUT/bench.json" > "$OUT/C-bench.log" 2>&1
  [[ -n ${EXTRA:-} ]] && timeout "$(cap 300)" bash -c "$EXTRA" > "$OUT/D-extra.log" 2>&1
fi
if [[ $part == evaltime ]]; then  # the paired timing's evaluation time against an earlier protocol, same device
  export CUDA_VISIBLE_DEVICES=$(g 0)
  if [[ -n ${OLD_TREE:-} ]]; then
    python3 -m pip install -q --no-deps --no-build-isolation --no-index --target /tmp/oldsite "$OLD_TREE" \
      > "$OUT/old-install.log" 2>&1 || echo "OLD_TREE did not install" >> "$OUT/old-install.log"
  fi
  for r in $(seq "${ROUNDS:-2}"); do
    # the old code from /tmp, so that neither this tree nor its editable install shadows it
    # a fresh WARPGYM_CACHE_DIR each time: no pass reads baseline times an earlier pass cached; Triton's and
    # Inductor's caches are shared, so the first round pays the compiles and the later ones compare the protocols
    [[ -n ${OLD_TREE:-} ]] && (cd /tmp && WARPGYM_CACHE_DIR=$(mktemp -d) PYTHONPATH=/tmp/oldsite:/tmp/site timeout "$(cap 200)" python3 -c \
      'import sys; from warpgym.experiments.cli import main; sys.argv[0] = "warpgym"; main()' bench --device cuda \
      --cold 1 --spread 0 --no-ncu --out "$OUT/bench-old-$r.json") >> "$OUT/A-bench-old.log" 2>&1
    WARPGYM_CACHE_DIR=$(mktemp -d) timeout "$(cap 200)" warpgym bench --device cuda --cold 1 --spread 0 --no-ncu \
      --out "$OUT/bench-$r.json" >> "$OUT/B-bench.log" 2>&1
  done
  # shellcheck disable=SC2086
  [[ -n ${PTX_TASKS:-} ]] && OUT=$J timeout "$(cap 420)" python3 scripts/gpu_ptx_check.py --tasks $PTX_TASKS \
    > "$OUT/C-ptx-check.log" 2>&1 && cp $J/ptx_check.json "$OUT/" 2>/dev/null
fi
if [[ $part == followup ]]; then  # what the 2026-12-03 run left open, in one call (.kb carried)
  export CUDA_VISIBLE_DEVICES=$(g 0)
  # where `warpgym eval` of the hand-written CUDA GEMM stalls (stages, checks and stacks every minute)
  timeout "$(cap 180)" warpgym eval ptx/gemm-fp8 tasks/solutions/ptx/gemm-fp8-cuda --device cuda --json --verbose \
    > $J/fp8_eval.json 2> "$OUT/A-fp8-eval.log"
  # the five processes and the evaluation time under the calibrated between-evaluations term
  timeout "$(cap 170)" python3 scripts/paired_repeat.py --out "$OUT/paired_repeat.json" --parallel 5 \
    --timeout "$(cap 160)" > "$OUT/B-paired-repeat.log" 2>&1
  timeout "$(cap 110)" warpgym bench --device cuda --cold 1 --spread 0 --no-ncu --out $J/bench.json \
    > "$OUT/C-bench.log" 2>&1
  # TF32 measured, not inferred: the convolutions whose Model output warpgym rejected and KernelBench took
  CUDA_VISIBLE_DEVICES=$(g 0) timeout "$(cap 120)" python3 scripts/kernelbench_side_by_side.py --kb .kb \
    --level1 0 --level2 0 --budget 1 --out "$OUT/kb_tf32.json" --only \
    50_conv_standard_2D__square_input__square_kernel,58_conv_transposed_3D__asymmetric_input__asymmetric_kernel,81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__,1_Conv2D_ReLU_BiasAdd \
    > "$OUT/D-kb-tf32.log" 2>&1
fi
if [[ $part == verify ]]; then  # the profilers in the confined worker, then every ptx reference and its CUDA ones
  export CUDA_VISIBLE_DEVICES=$(g 0)
  # VERIFY_TESTS="path or node id ...": those tests instead of the two files
  # shellcheck disable=SC2086
  timeout "$(cap 300)" python3 -m pytest -q ${VERIFY_TESTS:-tests/gpu/test_executed_work_gpu.py \
    tests/gpu/test_profile_confined_gpu.py} -p no:cacheprovider -rA -s --timeout 140 > "$OUT/A-profilers.log" 2>&1
  # PTX_TASKS="ptx/gemm-bf16 ...": those tasks only (default: the whole suite)
  # shellcheck disable=SC2086
  OUT=$J timeout "$(cap 420)" python3 scripts/gpu_ptx_check.py ${PTX_TASKS:+--tasks $PTX_TASKS} \
    > "$OUT/B-ptx-check.log" 2>&1
  cp $J/ptx_check.json "$OUT/" 2>/dev/null
fi
if [[ $part == bwdcheck ]]; then  # the hand-written CUDA backward: every variant's correctness and time
  export CUDA_VISIBLE_DEVICES=$(g 0)
  # shellcheck disable=SC2086
  timeout "$(cap 200)" python3 scripts/cuda_attention_bwd_check.py --out $J --budget "${BWD_SECONDS:-140}" ${BWD_AB:+--ab $BWD_AB} \
    > "$OUT/A-bwd-check.log" 2>&1
  cp $J/cuda_attention_bwd_check.json "$OUT/" 2>/dev/null
fi
if [[ $part == bwdsweep ]]; then  # attention backward variants (.sweep-bwd: scripts/attention_bwd_sweep.py emit)
  export CUDA_VISIBLE_DEVICES=$(g 0)
  # shellcheck disable=SC2086
  timeout "$(cap 400)" python3 scripts/attention_bwd_sweep.py run .sweep-bwd --reps "${REPS:-20}" --masks ${MASKS:-full causal} \
    > "$OUT/A-bwd-sweep.log" 2>&1
  cp .sweep-bwd/results.out.json "$OUT/bwd_sweep.json" 2>/dev/null
fi
if [[ $part == stall ]]; then  # which side moves between processes (matmul, ten of them), then where ncu stalls
  export CUDA_VISIBLE_DEVICES=$(g 0)
  timeout "$(cap 230)" python3 scripts/paired_repeat.py --out "$OUT/paired_repeat.json" --parallel 5 \
    --processes "${PROCESSES:-10}" --pairs "${PAIRS:-matmul/matmul=vendor}" --timeout "$(cap 220)" \
    > "$OUT/A-paired-repeat.log" 2>&1
  timeout "$(cap 330)" python3 scripts/ncu_probe.py --out "$OUT" --seconds "${NCU_SECONDS:-50}" \
    > "$OUT/B-ncu-probe.log" 2>&1
fi
if [[ $part == kbside ]]; then  # both harnesses on KernelBench's own problems (.kb holds src and KernelBench)
  resume=()  # KB_RESUME=file: an earlier call's rows, kept (only the missing pairs are judged)
  if [[ -n ${KB_RESUME:-} ]]; then cp "$KB_RESUME" $J/kb_side_by_side.json; resume=(--resume); fi
  # KB_ARGS: more options of the script (--spread, --budget SECONDS, --only ...)
  # shellcheck disable=SC2086
  CUDA_VISIBLE_DEVICES=$(g 0) timeout "$(cap 560)" python3 scripts/kernelbench_side_by_side.py --kb .kb \
    --level1 "${KB_LEVEL1:-6}" --level2 "${KB_LEVEL2:-2}" --out $J/kb_side_by_side.json "${resume[@]}" \
    ${KB_ARGS:-} > "$OUT/kbside.log" 2>&1
  cp $J/kb_side_by_side.json "$OUT/" 2>/dev/null
fi
if [[ $part == serve ]]; then  # `warpgym serve` from 8 clients against in-process (carry the serve wheels)
  timeout "$(cap 540)" python3 scripts/serve_throughput.py --clients "${CLIENTS:-8}" --rounds "${ROUNDS:-2}" \
    --workers-per-gpu "${WORKERS_PER_GPU:-1}" --out $J/serve_throughput.json > "$OUT/serve.log" 2>&1
fi
if [[ $part == streams || $part == all ]]; then
  ( export CUDA_VISIBLE_DEVICES=$(g 0)
    on timing && timeout "$(cap 150)" python3 scripts/timing_probe.py --out $J/timing_probe.json
    on paired && timeout "$(cap 300)" python3 scripts/paired_timing_probe.py --out $J/paired_timing_probe.json
    on bench && timeout "$(cap 300)" warpgym bench --device cuda --out $J/bench.json
    on kb && timeout "$(cap 330)" python3 scripts/kernelbench_compare.py --kb .kb/src \
      --tasks "${KB_TASKS:-math/add,normalization/softmax,matmul/matmul}" --out $J/kb.json ) > "$OUT/A-bench-kb.log" 2>&1 &
  ( export CUDA_VISIBLE_DEVICES=$(g 1)
    on probe && OUT=$J timeout "$(cap 150)" python3 scripts/sandbox_probe.py
    on tests && timeout "$(cap 380)" python3 -m pytest -v ${GPU_TESTS:-tests/gpu tests/test_sandbox.py} \
      -p no:cacheprovider -rA --timeout 150
    (( gpus < 4 )) && on suite && suite "$(g 1)" "${SUITE_JOBS:-4}" > "$OUT/D-suite.log" 2>&1
  ) > "$OUT/B-probe-tests.log" 2>&1 &  # with fewer than four GPUs the suite follows the tests on GPU 1
  suite_gpus=$(g 3)
  if on sweep || on ptx; then
    ( export CUDA_VISIBLE_DEVICES=$(g 2)
      on sweep && [[ -d .sweep ]] && timeout "$(cap 90)" python3 scripts/gemm_sweep.py run .sweep --reps 30
      on ptx && OUT=$J timeout "$(cap 450)" python3 scripts/gpu_ptx_check.py --reps 30
    ) > "$OUT/C-sweep-ptx.log" 2>&1 &
  elif [[ $gpus -ge 4 ]]; then
    suite_gpus="$(g 2),$(g 3)"  # the GPU of the skipped stream joins the suite
  fi
  if (( gpus >= 4 )) && on suite; then
    suite "$suite_gpus" $(( ${SUITE_JOBS:-4} * (${#suite_gpus} + 1) / 2 )) > "$OUT/D-suite.log" 2>&1 &
  fi
  wait
fi

python3 - "$OUT/results.json" <<'PY'
import json, pathlib, sys
merged = {}
for p in sorted(pathlib.Path("/tmp/kg").glob("*")):
    if p.suffix == ".json":
        try:
            merged[p.stem] = json.loads(p.read_text())
        except ValueError as exc:
            merged[p.stem] = f"unreadable: {exc}"
    elif p.suffix == ".md":
        merged[p.name] = p.read_text()
for p in pathlib.Path(".sweep").glob("results.out.json"):
    merged["gemm_sweep"] = json.loads(p.read_text())
pathlib.Path(sys.argv[1]).write_text(json.dumps(merged, indent=1, default=str))
PY
echo "done in $(( SECONDS - START )) s"
