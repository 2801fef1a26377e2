"""The numbers and feature list of each target, for the ``specs`` level of hardware context.

Figures are per device (H100 SXM / H200 for sm_90a, B200 for sm_100a). Where a figure was measured
on an H200 it is given beside the datasheet one, because the measured one is what a kernel can reach.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TargetSpec:
    target: str
    architecture: str
    devices: str
    numbers: list[tuple[str, str]]
    features: list[tuple[str, str]]
    """(family, one line on what it is and when it pays)."""
    not_available: list[str] = field(default_factory=list)


SPECS: dict[str, TargetSpec] = {
    "sm_90a": TargetSpec(
        target="sm_90a",
        architecture="Hopper (compute capability 9.0; the 'a' suffix unlocks wgmma and setmaxnreg)",
        devices="H100 SXM (80 GB HBM3), H200 (141 GB HBM3e)",
        numbers=[
            ("SMs", "132"),
            ("warp schedulers (SM sub-partitions) per SM", "4, one tensor core each"),
            ("max threads / warps / blocks per SM", "2048 / 64 / 32"),
            ("max threads per block", "1024"),
            ("32-bit registers per SM", "65536 (at most 255 per thread)"),
            ("L1 + shared memory per SM", "256 KB; shared memory up to 228 KB per SM, 227 KB per block "
                                          "(above 48 KB only after raising the block's dynamic limit)"),
            ("L2 cache", "50 MB (H100 SXM); 60 MB reported by the H200"),
            ("device memory bandwidth", "3.35 TB/s H100, 4.8 TB/s H200 (datasheet); 4.24 TB/s measured "
                                        "copy on the H200"),
            ("dense bf16/fp16 tensor-core peak", "989 TFLOP/s datasheet; cuBLAS reaches 670-780 on the H200"),
            ("dense fp8 (e4m3/e5m2) tensor-core peak", "1979 TFLOP/s datasheet; cuBLASLt reaches 1250-1400"),
            ("fp32 (non-tensor) peak", "67 TFLOP/s"),
            ("thread block cluster", "up to 8 blocks portable, 16 with the non-portable opt-in"),
            ("shared memory banks", "32 banks of 4 bytes"),
        ],
        features=[
            ("wgmma", "warpgroup (128 threads) asynchronous MMA, B (and optionally A) read from shared "
                      "memory through 64-bit matrix descriptors, accumulators in registers; SASS HGMMA "
                      "(QGMMA for fp8)"),
            ("tma", "cp.async.bulk.tensor: the copy engine moves a tile between global and shared memory "
                    "from a tensor map, completing on an mbarrier; SASS UTMALDG/UTMASTG"),
            ("mbarrier", "shared-memory barrier objects with arrival counts and transaction byte counts; "
                         "SASS SYNCS.*"),
            ("setmaxnreg", "moves registers between warpgroups (producer gives, consumers take) for warp "
                           "specialisation; SASS USETMAXREG"),
            ("clusters / distributed shared memory", "blocks of one cluster run together and address each "
                                                     "other's shared memory (mapa, ld/st.shared::cluster)"),
            ("stmatrix / ldmatrix", "warp-wide 8x8 b16 matrix stores and loads between registers and shared "
                                    "memory; SASS STSM/LDSM"),
            ("cp.async", "Ampere-style asynchronous 4/8/16-byte copies global -> shared"),
            ("fp8", "e4m3 and e5m2 inputs to wgmma"),
        ],
        not_available=["tcgen05 / tensor memory (Blackwell only)"],
    ),
    "sm_100a": TargetSpec(
        target="sm_100a",
        architecture="Blackwell datacenter (compute capability 10.0; 'a' unlocks tcgen05)",
        devices="B200 (two dies seen as one GPU, 192 GB HBM3e)",
        numbers=[
            ("SMs", "148"),
            ("warp schedulers (SM sub-partitions) per SM", "4, one 5th-generation tensor core each"),
            ("max threads / warps / blocks per SM", "2048 / 64 / 32"),
            ("max threads per block", "1024"),
            ("32-bit registers per SM", "65536 (at most 255 per thread)"),
            ("tensor memory (TMEM) per SM", "256 KB: 128 lanes x 512 columns of 32 bits"),
            ("L1 + shared memory per SM", "256 KB; shared memory up to 228 KB per SM, 227 KB per block"),
            ("L2 cache", "126 MB, split between the two dies (a far-die hit costs more)"),
            ("device memory bandwidth", "8 TB/s (datasheet, not measured here)"),
            ("dense bf16/fp16 tensor-core peak", "about 2250 TFLOP/s (datasheet)"),
            ("dense fp8 tensor-core peak", "about 4500 TFLOP/s (datasheet)"),
            ("thread block cluster", "up to 8 blocks portable, 16 non-portable; CTA pairs share an MMA "
                                     "(cta_group::2)"),
            ("shared memory banks", "32 banks of 4 bytes"),
        ],
        features=[
            ("tcgen05", "single-thread-issued MMA (tcgen05.mma) with the accumulator in tensor memory; "
                        "tcgen05.alloc/dealloc, ld/st between TMEM and registers, commit to an mbarrier; "
                        "SASS UTCHMMA (and kin), LDTM/STTM"),
            ("tma", "cp.async.bulk.tensor, as on Hopper, with multicast to a cluster"),
            ("mbarrier", "as on Hopper; tcgen05.commit arrives on one"),
            ("clusters / distributed shared memory", "as on Hopper"),
            ("stmatrix / ldmatrix", "as on Hopper"),
            ("setmaxnreg", "as on Hopper"),
            ("fp8 / fp6 / fp4", "kind::f8f6f4 and block-scaled kinds (mxf8f6f4, mxf4, nvf4) of tcgen05.mma"),
        ],
        not_available=["wgmma (Hopper only: sm_100a has no wgmma)"],
    ),
}


def spec_for(target: str) -> TargetSpec:
    try:
        return SPECS[target]
    except KeyError:
        raise KeyError(f"no hardware spec for target {target!r}; known: {', '.join(SPECS)}") from None
