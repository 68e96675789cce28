"""sonnx-check's own memory through the phases of reading a model (issue 31 item 2): VmRSS and VmHWM (MiB)
after reading the file, onnx's checker verdict, the static check's skeleton, the whole model's parse, the
file's bytes released, the static check, and the comparison's setup (the weights written for the worker,
compare/runtimes/worker/shared_weights.py). One fresh process per model.

Run: python benchmarks/bench_load_phases.py MODEL.onnx [MODEL.onnx ...]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PHASES = """
import sys
from sonnx_check.engine import check_model_view, checker_verdict_before_parse
from sonnx_check.loading import read_model_file

def status():
    fields = dict(line.split(':', 1) for line in open('/proc/self/status'))
    return [int(fields[k].split()[0]) // 1024 for k in ('VmRSS', 'VmHWM')]

path = sys.argv[1]
print('imported', *status())
source = read_model_file(path)
print('file read', *status())
verdict = checker_verdict_before_parse(source, None)
print('checker verdict', *status())
skeleton = source.skeleton()
print('skeleton parsed', *status())
whole = source.model()
print('whole model parsed', *status())
source.release()
print('bytes released', *status())
result, view = check_model_view(skeleton, path, None, elided=source.elided, checker_verdict=verdict)
print('static check', *status())
from sonnx_check.compare.runtimes.worker.shared_arrays import Region
from sonnx_check.compare.runtimes.worker.shared_weights import split
light, table = split(whole, Region.create())  # what the comparison sends its worker (a shared memory file)
print('weights sent', *status())
weights = sum(len(t.raw_data) for t in whole.graph.initializer) // 2**20
print('weights', weights, weights)
"""


def main() -> None:
    for model in sys.argv[1:]:
        out = subprocess.run(
            [sys.executable, "-c", PHASES, model], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
        print(f"{model}\n  {'phase':<20} {'VmRSS MiB':>10} {'VmHWM MiB':>10}")
        for line in out.splitlines():
            *name, rss, hwm = line.split()
            print(f"  {' '.join(name):<20} {rss:>10} {hwm:>10}")


if __name__ == "__main__":
    main()
