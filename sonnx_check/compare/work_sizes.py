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
