"""The worker process that runs the runtime under test (onnxruntime, OpenVINO or tract: ``--runtime``,
../engines.py), shared by all of them: the comparison's side of it (host.py: one worker per model's
comparison, the sessions held there), the process itself (process.py: its handle and its request loop), and
what crosses between them (shared_arrays.py: the arrays in shared memory; model_bytes.py: the models derived
from the comparison's model on its encoding). No module here imports a runtime or names one in code: the
worker opens the session class engines.py declares for the runtime it was started with."""
