"""The hand-written CUDA references of ptx/attention-fwd and ptx/attention-fwd-causal on a CPU.

Their kernels compile through the loader for sm_90a and sm_100a with the instruction families the tasks
prove in the SASS, without spills; their launches pass the loader's checks; both tasks name them as extra
references. What a GPU would show first if it were wrong is modelled here from the PTX ISA's definitions:
where each operand element of every wgmma / tcgen05.mma is read from shared memory (the descriptors as
the kernels' own source encodes them, against where TMA's 128-byte swizzle put the element), how the S
accumulator's registers become wgmma's A fragments for P, the causal mask on those registers, the tcgen05
instruction descriptors, and the order the persistent grid walks its work.
"""

from __future__ import annotations

import json
import re

import pytest
import torch
from reference_module import run_reference
from warpgym.env.judge.static import check_source
from warpgym.env.toolchain import attachments, loader
from warpgym.env.toolchain.registry import REGISTRY, KernelInfo
from warpgym.experiments.cli import main
from warpgym.tasks import get_task
from warpgym.tasks.spec import SOLUTIONS_DIR

TASKS = {"ptx/attention-fwd": "ptx/attention-fwd-cuda",
         "ptx/attention-fwd-causal": "ptx/attention-fwd-causal-cuda"}
SOURCES = {"sm_90a": "attention_fwd_wgmma.cu", "sm_100a": "attention_fwd_tcgen05.cu"}
PROVEN = {"sm_90a": ("wgmma", "tma", "mbarrier", "setmaxnreg"), "sm_100a": ("tcgen05", "tma", "mbarrier")}
"""What each target's kernel must show in its SASS (not only its PTX: ptxas may drop an instruction)."""
OPCODES = {"sm_90a": ("HGMMA.64x128x16.F32.BF16", "UTMALDG.2D", "USETMAXREG.TRY_ALLOC", "USETMAXREG.DEALLOC",
                      "SYNCS.PHASECHK"),
           "sm_100a": ("UTCHMMA", "UTCATOMSWS", "UTCBAR", "LDTM", "STTM", "UTMALDG.2D", "SYNCS.PHASECHK")}
RS_HGMMA = re.compile(r"HGMMA\.64x128x16\.F32\.BF16 R\d+, R\d+, gdesc\[UR\d+\]\.tnspB")
"""O += P V: A (P) from registers, B (V) from shared memory in its transposed (N-major) layout."""
SS_HGMMA = re.compile(r"HGMMA\.64x128x16\.F32\.BF16 R\d+, gdesc\[UR\d+\], (R\d+|RZ)")
needs_tools = pytest.mark.skipif(loader.nvrtc_version() is None or loader.ptxas_path() is None,
                                 reason="NVRTC (pip install nvidia-cuda-nvrtc) or ptxas not available")


def missing_in_sass(kernel: loader.Kernel) -> dict[str, str]:
    """Each family the kernel's target needs that its SASS lacks, with what its PTX had."""
    info: KernelInfo = kernel.info
    return {f: f"ptx {info.ptx_counts.get(f, 0)}, sass 0" for f in PROVEN[kernel.module.record.target]
            if not info.sass_counts.get(f)}


def source_of(target: str) -> str:
    return (SOLUTIONS_DIR / TASKS["ptx/attention-fwd"] / SOURCES[target]).read_text()


@pytest.fixture
def solution():
    """The reference's module executed as the worker runs it, for a task and a target: its namespace."""
    def load(task_id: str, target: str) -> dict:
        candidate = get_task(task_id).solution_candidate(TASKS[task_id])
        return run_reference(candidate, target, "attention-fwd-cuda.py")
    yield load
    attachments.clear()


def test_both_tasks_name_it_and_one_source_serves_both():
    full = get_task("ptx/attention-fwd").solution_candidate(TASKS["ptx/attention-fwd"])
    causal = get_task("ptx/attention-fwd-causal").solution_candidate(TASKS["ptx/attention-fwd-causal"])
    for task_id, extra in TASKS.items():
        task = get_task(task_id)
        assert task.extra_solutions == (extra,)
        assert all(name.endswith(".ptx") for name in task.solution_candidate().attachments)
    assert set(full.attachments) == set(SOURCES.values()) and causal.attachments == full.attachments
    assert full.source.count("\nCAUSAL = False\n") == 1
    assert causal.source == full.source.replace("\nCAUSAL = False\n", "\nCAUSAL = True\n")
    for candidate in (full, causal):
        report = check_source(candidate.source, "attention_fwd", ["q", "k", "v"], "cuda")
        assert report.ok, report.violations


@needs_tools
@pytest.mark.parametrize("task_id", list(TASKS))
@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_the_kernel_proves_its_targets_features_in_the_sass(solution, target, task_id):
    namespace = solution(task_id, target)
    kernel, config = namespace["KERNEL"], namespace["CONFIG"]
    record = kernel.module.record
    assert record.target == target and record.ptx.count(".entry") == 1
    assert config["defines"]["CAUSAL"] == int(task_id.endswith("causal"))
    assert missing_in_sass(kernel) == {}, record.log
    assert [op for op in OPCODES[target] if op not in record.sass] == []
    assert kernel.info.spills == 0 and kernel.info.stack == 0, record.log
    for warning in ("C7515", "C7508", "C7510"):   # wgmma serialised, setmaxnreg dropped
        assert warning not in record.log and not any(warning in w for w in record.warnings)
    assert kernel.info.registers * config["threads"] <= 65536
    # The layout the kernel traps on and the size the host launches with are the same number.
    assert f".const .align 4 .u32 attention_shared_bytes = {config['shared']};" in record.ptx
    if target == "sm_90a":
        # setmaxnreg moves registers within the launch's allocation: 168 a thread at 384 threads.
        assert kernel.info.registers == 168
        assert "setmaxnreg.dec.sync.aligned.u32 24" in record.ptx
        assert "setmaxnreg.inc.sync.aligned.u32 240" in record.ptx
        # At least one HGMMA per k16 step of a tile: 8 for S = QK^T (d = 128), 8 for O += PV (128 keys);
        # the overlapped variant unrolls twice as many.
        assert len(RS_HGMMA.findall(record.sass)) >= 8 and len(SS_HGMMA.findall(record.sass)) >= 8
    else:
        assert "tcgen05.mma.cta_group::1.kind::f16" in record.ptx
        assert "tcgen05.alloc" in record.ptx and "tcgen05.dealloc" in record.ptx
        assert "tcgen05.ld.sync.aligned.32x32b.x128.b32" in record.ptx


@needs_tools
@pytest.mark.parametrize("defines", [{"OVERLAP": 1, "PINGPONG": 1}, {"OVERLAP": 1}, {"STAGES": 3}])
def test_every_hopper_variant_the_gpu_check_tries_compiles_without_spills(solution, defines):
    namespace = solution("ptx/attention-fwd-causal", "sm_90a")
    config, kernel = namespace["build"]("sm_90a", defines)
    assert missing_in_sass(kernel) == {} and kernel.info.spills == 0 and kernel.info.stack == 0
    assert f"attention_shared_bytes = {config['shared']};" in kernel.module.record.ptx
    assert config["shared"] <= 232448
    named = "BAR.ARV" in kernel.module.record.sass
    assert named == (defines.get("PINGPONG") == 1)  # the consumers' turns are named barriers


@needs_tools
def test_options_outside_the_layouts_are_refused_at_compile_time(solution):
    namespace = solution("ptx/attention-fwd", "sm_90a")
    with pytest.raises(loader.CompileError, match="STAGES must be 2 or 3"):
        namespace["build"]("sm_90a", {"STAGES": 4})
    with pytest.raises(loader.CompileError, match="STAGES must be 2"):
        namespace["build"]("sm_100a", {"STAGES": 3})


@needs_tools
@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_a_launch_passes_the_loaders_checks_and_stops_at_the_missing_gpu(solution, target):
    namespace = solution("ptx/attention-fwd", target)
    q = torch.zeros(2, 3, 384, 128, dtype=torch.bfloat16)
    before = REGISTRY.launch_count
    with pytest.raises(loader.NoDeviceError):
        namespace["attention_fwd"](q, q, q)
    assert REGISTRY.launch_count == before + 1
    launch, config = REGISTRY.launches[-1], namespace["CONFIG"]
    assert launch.kernel == config["kernel"] and launch.block == (config["threads"], 1, 1)
    assert launch.grid == (1, 1, 1)   # 12 pairs of query blocks on the single "SM" a CPU run assumes
    assert launch.shared_mem == config["shared"] > 3 * 48 * 1024   # above the default 48 KB: opted in
    namespace["KERNEL"].check(132, config["threads"], config["shared"])   # an H200's grid: within limits
    with pytest.raises(ValueError, match="multiple of 128"):
        namespace["attention_fwd"](q[..., :64], q[..., :64], q[..., :64])
    with pytest.raises(ValueError, match="bfloat16"):
        namespace["attention_fwd"](q.half(), q.half(), q.half())


# ---- where the MMAs read each operand element, from the PTX ISA's canonical layouts -------------------

BOX = 128 * 64 * 2


def c_value(expression: str, **names: int) -> int:
    """A C integer expression of the kernels' source, evaluated: casts and `u` suffixes dropped, `/` made
    integer division (every operand is a non-negative int)."""
    py = re.sub(r"\(uint(32|64)_t\)", "", expression)
    py = " ".join(re.sub(r"\b(\d+)u\b", r"\1", py).replace("/", "//").split())
    return eval(py, {"__builtins__": {}}, names)  # noqa: S307 - our own source's arithmetic


def c_function(source: str, name: str) -> str:
    """The returned expression of a one-line `__device__` function of the source."""
    m = re.search(rf"\b{name}\((?:uint32_t|int) \w+(?:, int \w+)?\) \{{\s*return (.*?);\s*\}}", source, re.S)
    assert m, f"{name} not found"
    return m.group(1)


def c_constant(source: str, name: str) -> int:
    m = re.search(rf"constexpr uint32_t [^;]*\b{name} = ([^;,]+)[;,]", source)
    assert m, f"{name} not found"
    return c_value(m.group(1))


def swizzle128(addr: int) -> int:
    """The 128-byte swizzle on shared-memory address bits: the 16-byte chunk (bits 4-6) XOR the row mod 8
    (bits 7-9)."""
    return addr ^ (((addr >> 7) & 7) << 4)


def tma_address(tile: int, row: int, col: int) -> int:
    """Where TMA put element (row, col) of a 128 x 128 bf16 tile loaded as two 128 x 64 boxes, swizzled."""
    box, c = divmod(col, 64)
    return swizzle128(tile + box * BOX + row * 128 + 2 * c)


def fields(desc: int, target: str) -> dict[str, int]:
    out = {"start": (desc & 0x3FFF) << 4, "lbo": ((desc >> 16) & 0x3FFF) << 4,
           "sbo": ((desc >> 32) & 0x3FFF) << 4, "base_offset": (desc >> 49) & 7}
    if target == "sm_90a":
        out["swizzle"] = {1: 128}.get(desc >> 62, 0)
    else:
        out["swizzle"] = {2: 128}.get(desc >> 61, 0)
        out["version"] = (desc >> 46) & 7
    return out


def k_major(f: dict, mn: int, k: int) -> int:
    """Canonical K-major, 128-byte swizzle, bf16: ((8,m),(8,2)):((64,SBO),(1,8)) elements, swizzled."""
    return swizzle128(f["start"] + (mn % 8) * 128 + (mn // 8) * f["sbo"] + 2 * k)


def mn_major(f: dict, mn: int, k: int) -> int:
    """Canonical MN-major, 128-byte swizzle, bf16: ((8,8,m),(8,k)):((1,8,LBO),(64,SBO)) elements, swizzled."""
    return swizzle128(f["start"] + 2 * (mn % 64) + (mn // 64) * f["lbo"] + (k % 8) * 128
                      + (k // 8) * f["sbo"])


def descriptor(source: str, name: str, addr: int) -> int:
    return c_value(c_function(source, name), addr=addr, BOX_BYTES=c_constant(source, "BOX_BYTES"))


def operand_mismatches(source: str, target: str, lbo_sbo_swapped: bool = False) -> list[str]:
    """Every operand element of S = Q K^T and O += P V (and on sm_100a the P tile) that the descriptors,
    as the source encodes them, would read from elsewhere than where the data is."""
    q_tile, k_tile = 1024, 1024 + 2 * BOX
    v_tile = k_tile + 2 * BOX
    bad = []

    def desc(name: str, addr: int) -> dict:
        f = fields(descriptor(source, name, addr), target)
        assert f["swizzle"] == 128 and f["base_offset"] == 0 and f.get("version", 1) == 1
        if lbo_sbo_swapped and name == "desc_n_major":
            f["lbo"], f["sbo"] = f["sbo"], f["lbo"]
        return f

    rows_a = range(64) if target == "sm_90a" else range(128)
    for kk in range(8):
        off = (kk // 4) * BOX + (kk % 4) * 32   # the kernels' K step inside the 64-column boxes
        for consumer in ((0, 1) if target == "sm_90a" else (0,)):
            qa = desc("desc_k_major", q_tile + consumer * 64 * 128 + off)
            bad += [f"Q k{kk} ({m}, {k})" for m in rows_a for k in range(16)
                    if k_major(qa, m, k) != tma_address(q_tile, 64 * consumer + m, 16 * kk + k)]
        kb = desc("desc_k_major", k_tile + off)
        bad += [f"K k{kk} ({n}, {k})" for n in range(128) for k in range(16)
                if k_major(kb, n, k) != tma_address(k_tile, n, 16 * kk + k)]
        vb = desc("desc_n_major", v_tile + kk * 16 * 128)
        bad += [f"V k{kk} ({n}, {k})" for n in range(128) for k in range(16)
                if mn_major(vb, n, k) != tma_address(v_tile, 16 * kk + k, n)]
        if target == "sm_100a":
            p_tile = v_tile + 2 * BOX
            chunk = c_function(source, "swizzled_chunk")
            pa = desc("desc_k_major", p_tile + off)
            bad += [f"P k{kk} ({m}, {k})" for m in range(128) for k in range(16)
                    if k_major(pa, m, k) != p_tile + c_value(chunk, row=m, chunk=(16 * kk + k) // 8,
                                                             BOX_BYTES=BOX) + 2 * (k % 8)]
    return bad


@pytest.mark.parametrize("target", ["sm_90a", "sm_100a"])
def test_every_mma_operand_element_is_read_where_tma_or_the_softmax_put_it(target):
    source = source_of(target)
    assert "const uint32_t off = (kk / 4) * BOX_BYTES + (kk % 4) * 32;" in source
    assert "desc_n_major(v_tile + kk * 16 * 128)" in source
    assert operand_mismatches(source, target) == []
    # The model can fail: with the N-major strides swapped, V's second 64 columns and its keys 8-15 are wrong.
    wrong = operand_mismatches(source, target, lbo_sbo_swapped=True)
    assert wrong and all(w.startswith("V ") for w in wrong)
    assert any(w.startswith("V k0 (64, ") for w in wrong) and any(w.endswith(", 8)") for w in wrong)


def test_the_softmax_writes_p_in_the_layout_tma_would_have():
    chunk = c_function(source_of("sm_100a"), "swizzled_chunk")
    for row in range(128):
        for key in range(128):
            ours = c_value(chunk, row=row, chunk=key // 8, BOX_BYTES=BOX) + 2 * (key % 8)
            assert 4096 + ours == tma_address(4096, row, key)


def test_the_tcgen05_instruction_descriptors_say_128_x_128_bf16_into_fp32_and_v_transposed():
    source = source_of("sm_100a")
    for name, transpose_b, n in (("IDESC_QK", 0, 128), ("IDESC_PV", 1, 128)):
        m = re.search(rf"constexpr uint32_t {name} = (.*?);", source, re.S)
        idesc = c_value(m.group(1), BM=128, BN=128, HEAD_DIM=128)
        assert (idesc >> 4) & 3 == 1 and (idesc >> 7) & 7 == 1 and (idesc >> 10) & 7 == 1   # f32 = bf16 bf16
        assert (idesc >> 15) & 1 == 0 and (idesc >> 16) & 1 == transpose_b
        assert ((idesc >> 17) & 0x3F) << 3 == n and ((idesc >> 24) & 0x1F) << 4 == 128
        assert idesc & 0b111 == 0 and (idesc >> 13) & 3 == 0   # dense, no negation


# ---- registers: the S accumulator as P's A fragments, the causal mask, the epilogue -------------------

def accumulator(thread: int, reg: int) -> tuple[int, int]:
    """wgmma m64nNk16 fp32 D: warp w holds rows 16w + lane/4 (+8); d[4j..4j+3] are columns 8j + 2(lane%4)
    + 0, 1 of the first row, then the same of the second (PTX ISA, register fragments of D)."""
    warp, lane = divmod(thread, 32)
    return 16 * warp + lane // 4 + 8 * ((reg // 2) % 2), 8 * (reg // 4) + 2 * (lane % 4) + reg % 2


def a_fragment(thread: int, element: int) -> tuple[int, int]:
    """wgmma m64nNk16 bf16 A in registers: elements a0..a7 (two per .bf16x2 register, low half first) are
    (row, col) (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1), then the same 8 columns on, g = 16w + lane/4."""
    warp, lane = divmod(thread, 32)
    return 16 * warp + lane // 4 + 8 * ((element // 2) % 2), 2 * (lane % 4) + element % 2 + 8 * (element // 4)


def p_seen_by_the_mma(s: torch.Tensor, pack) -> torch.Tensor:
    """The 64 x 128 P that O += P V multiplies when each thread's P registers are `pack(its S registers)`:
    register q of P feeds K step q // 4 as its register q % 4."""
    held = {t: [s[accumulator(t, i)] for i in range(64)] for t in range(128)}
    p = torch.full_like(s, float("nan"))
    for t in range(128):
        for q, (lo, hi) in enumerate(pack(held[t])):
            for half, value in enumerate((lo, hi)):
                row, col = a_fragment(t, 2 * (q % 4) + half)
                p[row, 16 * (q // 4) + col] = value
    return p


def test_p_goes_from_the_s_accumulator_to_wgmmas_a_fragments_without_shuffles():
    source = source_of("sm_90a")
    assert "for (int i = 0; i < BN / 2; ++i) p[i] = pack_bf16x2(s[2 * i], s[2 * i + 1]);" in source
    assert "wgmma_rs(o, p + 4 * kk," in source
    s = torch.randn(64, 128, generator=torch.Generator().manual_seed(0))
    assert torch.equal(p_seen_by_the_mma(s, lambda r: [(r[2 * i], r[2 * i + 1]) for i in range(32)]), s)
    # Pairs taken another way hand the MMA a different matrix.
    shuffled = p_seen_by_the_mma(s, lambda r: [(r[i], r[i + 32]) for i in range(32)])
    assert not torch.equal(shuffled, s)


def test_the_causal_mask_and_the_epilogue_address_the_accumulators_rows_and_columns():
    source = source_of("sm_90a")
    assert "const int col = 8 * j + 2 * (lane % 4) + e;" in source
    assert "if (col > row) s[4 * j + e] = neg_inf;" in source
    assert "if (col > row + 8) s[4 * j + 2 + e] = neg_inf;" in source
    assert "const int row = 64 * consumer + 16 * warp + lane / 4;" in source
    assert "o0 + 8 * j) = pack_bf16x2(o[4 * j] * inv[0], o[4 * j + 1] * inv[0])" in source
    for consumer in range(2):
        for t in range(128):
            warp, lane = divmod(t, 32)
            row = 64 * consumer + 16 * warp + lane // 4           # the kernel's first row of the thread
            for j in range(16):
                for e in range(2):
                    col = 8 * j + 2 * (lane % 4) + e                # the kernel's column of s[4j + e]
                    for reg, kernel_row in ((4 * j + e, row), (4 * j + 2 + e, row + 8)):
                        r, c = accumulator(t, reg)
                        assert (64 * consumer + r, c) == (kernel_row, col)
                        assert (col > kernel_row) == (c > 64 * consumer + r)   # masked = above the diagonal


# ---- the work order ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 128), (3, 384), (1, 640), (6, 512), (128, 4096)])
def test_the_schedule_walks_every_query_block_of_every_head_once(solution, shape):
    heads, s = shape
    namespace = solution("ptx/attention-fwd", "sm_90a")
    order = namespace["schedule"](heads, s)
    assert sorted(order) == [(bh, mb) for bh in range(heads) for mb in range(s // 128)]
    per_pair = namespace["pairs"](heads, s)
    assert per_pair == heads * ((s // 128 + 1) // 2)


def test_the_pairs_balance_causal_work_over_an_h200s_blocks(solution):
    """Pair p of a head is query blocks (31 - p, p): 33 key blocks of work whatever p; the 132 blocks of
    the grid take 15 or 16 pairs. In plain order (one query block a slot) the busiest block would get 12%
    more than the mean."""
    namespace = solution("ptx/attention-fwd-causal", "sm_90a")
    heads, s, grid = 128, 4096, 132
    order = namespace["schedule"](heads, s)   # 32 query blocks a head: every pair holds two
    work = [0] * grid
    for u in range(namespace["pairs"](heads, s)):
        work[u % grid] += sum(mb + 1 for _, mb in order[2 * u: 2 * u + 2])
    assert max(work) / (sum(work) / grid) < 1.035
    plain = [0] * grid
    for t in range(heads * (s // 128)):
        plain[t % grid] += t % (s // 128) + 1
    assert max(plain) / (sum(plain) / grid) > 1.1


@needs_tools
def test_suite_check_checks_both_references_of_the_causal_task(tmp_path, capsys):
    log = tmp_path / "rows.jsonl"
    argv = ["suite", "check", "--device", "cpu", "--task", "ptx/attention-fwd-causal", "--shapes", "dev",
            "--jsonl", str(log)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["task"], r["reference"], r["ok"], r["compiled"]) for r in rows] == [
        ("ptx/attention-fwd-causal", None, True, True),
        ("ptx/attention-fwd-causal", "ptx/attention-fwd-causal-cuda", True, True)]
    assert "2 of 2 reference solutions pass" in out


# ---- the arithmetic ------------------------------------------------------------------------------------

def emulate(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, scale: float, ln2: float,
            overlap: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernels' online softmax over key blocks of 128, in torch: S in fp32, the running max in base 2
    with the scale folded in, P rounded to bf16 for P V, O rescaled by 2^(m_old - m_new) (after the previous
    block's P V with OVERLAP, as the loop orders it), then O / l as bf16 and lse = (m + log2 l) ln 2."""
    b, h, s, d = q.shape
    qf, kf, vf = (x.float().reshape(b * h, s, d) for x in (q, k, v))
    o_out, lse_out = torch.empty(b * h, s, d), torch.empty(b * h, s)
    rows = torch.arange(128)
    for mb in range(s // 128):
        qs = qf[:, 128 * mb:128 * (mb + 1)]
        m = torch.full((b * h, 128), float("-inf"))
        total, o = torch.zeros(b * h, 128), torch.zeros(b * h, 128, d)
        pending = None
        for kb in range(mb + 1 if causal else s // 128):
            sc = qs @ kf[:, 128 * kb:128 * (kb + 1)].transpose(1, 2)
            if causal and kb == mb:
                sc = sc.masked_fill(rows[None, :] > rows[:, None], float("-inf"))
            m_new = torch.maximum(m, sc.amax(-1) * scale)
            alpha = torch.exp2(m - m_new)
            p = torch.exp2(sc * scale - m_new[..., None])
            total = total * alpha + p.sum(-1)
            pv = p.bfloat16().float() @ vf[:, 128 * kb:128 * (kb + 1)]
            if overlap:
                if pending is not None:
                    o = o + pending
                o, pending = o * alpha[..., None], pv
            else:
                o = o * alpha[..., None] + pv
            m = m_new
        if overlap:
            o = o + pending
        o_out[:, 128 * mb:128 * (mb + 1)] = o / total[..., None]
        lse_out[:, 128 * mb:128 * (mb + 1)] = (m + torch.log2(total)) * ln2
    return o_out.bfloat16().reshape(b, h, s, d), lse_out.reshape(b, h, s)


@pytest.mark.parametrize("task_id", list(TASKS))
@pytest.mark.parametrize("overlap", [True, False])
def test_the_kernels_arithmetic_meets_the_tasks_tolerances(solution, task_id, overlap):
    from warpgym.tasks.ptx.attention import attention_forward

    namespace = solution(task_id, "sm_90a")
    source = source_of("sm_90a")
    ln2 = float(re.search(r"constexpr float LN2 = ([\d.]+)f;", source).group(1))
    assert f"constexpr float LN2 = {ln2!r}f;" in source_of("sm_100a") and ln2 == pytest.approx(0.6931472)
    causal = task_id.endswith("causal")
    task = get_task(task_id)
    for case in task.cases("dev") + task.cases("heldout")[:1]:
        g = torch.Generator().manual_seed(case["s"])
        shape = (case["b"], case["h"], case["s"], 128)
        q, k, v = (torch.randn(shape, generator=g).bfloat16() for _ in range(3))
        o, lse = emulate(q, k, v, causal, namespace["LOG2E"] / 128 ** 0.5, ln2, overlap)
        ref_o, ref_lse = attention_forward(q.double(), k.double(), v.double(), causal)
        tol_o, tol_lse = task.tolerance("bfloat16"), task.tolerance("float32")
        torch.testing.assert_close(o.double(), ref_o, atol=tol_o.atol, rtol=tol_o.rtol)
        torch.testing.assert_close(lse.double(), ref_lse, atol=tol_lse.atol, rtol=tol_lse.rtol)
    # The check can fail: natural exp with the base-2 scale is another softmax.
    wrong, _ = emulate(q, k, v, causal, 1 / 128 ** 0.5, ln2, overlap)
    assert not torch.allclose(wrong.double(), ref_o, atol=tol_o.atol, rtol=tol_o.rtol)
