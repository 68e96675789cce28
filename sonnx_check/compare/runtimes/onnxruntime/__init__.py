"""onnxruntime as the runtime under test: the runner (runner.py), the host side of its worker process
(host.py), the worker itself (worker.py) and the session it runs (session.py), and what crosses between them
(shared_arrays.py, model_bytes.py). The only place in the comparison that imports onnxruntime.

The worker and its host are shared: OpenVINO and tract (``--runtime``, ../engines.py, ../in_worker.py) run
in the same worker process, which opens their session class instead of onnxruntime's."""
