"""The edge battery in batches of a bounded size, whatever the memory budget leaves.

The battery prepares every configuration of a batch on a dataset before the runtime runs them (the fed data,
the reference's outputs and bounds), and receives all their outputs at once; a batch under the whole of
sonnx-check's share of --max-memory held all of DenseNet-121's 428 configurations at once: 530 MiB beyond
the loaded model, the comparison's peak. Beyond a few tens of configurations a larger batch saves only
sessions on small models (a tenth of a second each), so batches are grouped under ``BATCH_ROOM`` bytes of
the configurations' own figures (``Configuration.nbytes``), or the budget if smaller. What each
configuration is fed, and what it is compared against, does not depend on its batch's company (a dataset
that does not concern it feeds it its own filler, and its outputs are not asked for), so the records are
the same; a configuration larger than the room runs in a batch of its own, as one larger than the budget
did.

The budget itself keeps its meaning (battery.py): a configuration over it is not run, and what a batch
leaves of it is where the kernels may keep a weight's float64 forms (constant_cache.allowance).
"""

from __future__ import annotations

# bytes of Configuration.nbytes a batch holds at most (the figure counts about twice what is measured);
# NodeEdges.room, which tests lower
BATCH_ROOM = 64 << 20
