"""Measured working memory of the comparison's steps, per element or per output: memory.py plans batches
with them, localise.py and battery.py budget a divergence's explanation (a module of its own so that
localise, which memory's planner types name, does not import the planner)."""

# The diff keeps a one-byte mask per element and works through the rest in fixed-size chunks.
MASK_BYTES_PER_ELEMENT = 1
CHUNK_WORK = 16 * 2**20
# A reference kernel's temporaries, as a multiple of its outputs (measured: MaxPool with Indices, 23 bytes
# per element beyond its 12; Max, 1 beyond 4).
REFERENCE_WORK = 2
# Matching a diverging output against the known onnxruntime behaviours: measured up to 22 bytes per element
# (Indices of a MaxPool), done only when the output diverges.
KNOWN_BYTES_PER_ELEMENT = 24

# The sums of products work on their operands, not their outputs (measured with tracemalloc, the kernel and
# its bound together, float32; benchmarks/bench_memory.py measures the whole comparison):
# - Conv: its float64 im2col and the bound's magnitudes, up to 1.4x K x P float64 words (K = C/group x
#   kernel, P = N x output positions: 64 -> 64 channels on 224 x 224, 312 MiB for an im2col of 231 MiB),
#   and its weight's float64 forms, up to 12x its float64 size (512 -> 512 on 14 x 14: 113 MiB for 18 MiB);
# - Gemm: B' by blocks of 32 MiB of float64 (gemm._BLOCK_BYTES; the bound's magnitudes too,
#   products_common._ABS_BLOCK_BYTES), nothing of the whole weight beyond them: at most 10x a block
#   (alpha or beta not 1: the float64 Ozaki slices of a block, 307 MiB on a 64 MiB weight; alpha = beta =
#   1, 67 MiB on VGG's 392 MiB weight, 1.2 GiB before the bound took blocks: bench_gemm_memory.py), up to
#   14x B' in float32 for a weight smaller than a block; A' in float64, its slices and magnitudes beside;
# - MatMul: both operands in float64 and their magnitudes.
CONV_IM2COL_WORK = 3  # times K x P float64 words
CONV_WEIGHT_WORK = 12  # times the weight's float64 size
GEMM_BLOCK_WORK = 10  # times B' in float64, up to one block
GEMM_BLOCK_BYTES = 32 * 2**20
GEMM_OPERAND_WORK = 8  # times A' in float64 (its Ozaki slices when scaled)
MATMUL_OPERAND_WORK = 3  # times both operands in float64


def products_work(op_type: str, operands: list[int], output: int, conv_k: int | None) -> int | None:
    """The working memory of a sum-of-products kernel (bytes) from its operands' and output's element
    counts; ``conv_k``: a Conv's K (C/group x kernel positions) when its weight's shape is known. None for
    another operator (REFERENCE_WORK times its outputs then)."""
    if op_type == "Conv" and len(operands) >= 2:
        weight = operands[1]
        k = conv_k if conv_k is not None else weight  # unknown shape: K at most the weight's size
        positions = output // max(1, weight // max(1, k))  # output / C_out
        return CONV_IM2COL_WORK * 8 * k * positions + CONV_WEIGHT_WORK * 8 * weight + 6 * 4 * output
    if op_type == "Gemm" and len(operands) >= 2:
        blocks = GEMM_BLOCK_WORK * min(8 * operands[1], GEMM_BLOCK_BYTES)
        return blocks + GEMM_OPERAND_WORK * 8 * operands[0] + 6 * 8 * output
    if op_type == "MatMul" and len(operands) >= 2:
        return MATMUL_OPERAND_WORK * 8 * (operands[0] + operands[1]) + 6 * 8 * output
    return None
