"""onnxruntime as the runtime under test: its runner (runner.py: execution providers, optimisation level)
and the session the worker process opens for it (session.py). The only place in the comparison that
imports onnxruntime or names it in code (besides the runtimes' declaration, ../engines.py).

The worker process and its host are every runtime's: ../worker/."""
