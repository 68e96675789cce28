"""numpy's BLAS on one thread in sonnx-check's own processes; imported for its effect by the command's module.

OpenBLAS reads its thread count once, when numpy loads, and by default runs one thread per core, which
spin-wait between calls: on a shared 2-core machine a float64 matmul of the comparison went from 5.5 ms on
one thread to 150 ms on two, and the whole ``--compare`` took twice as long. The command's module
(``cli.py``) imports this before anything imports numpy; the onnxruntime worker and the ``--jobs`` pool
processes inherit the setting. A value the user set is kept. Importing the library otherwise changes
nothing.
"""

from __future__ import annotations

import os

VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

for _variable in VARIABLES:
    os.environ.setdefault(_variable, "1")
