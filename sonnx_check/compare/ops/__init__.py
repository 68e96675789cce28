"""Each operator's comparison facts, in one module per operator (``compare/ops/<op>.py``), named by its
declaration (``[comparison]`` in rules/<Op>.toml): its accuracy bound (a ``Rule``), its operator-specific
edge patterns (builders) and the predicates of its known onnxruntime departures. Conv, Gemm and MatMul share
``products.py``. These modules are imported only when a comparison resolves the references (``facts.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from sonnx_check.compare.judging.tolerance import NodeData
from sonnx_check.reference import execute


def kernel_function(data: NodeData, name: str) -> Callable[..., Any] | None:
    """A function of the module that holds the operator's declared kernel (reference/conv.py, ...)."""
    return kernel_module_function(data.node.op_type, name)


def kernel_module_function(op_type: str, name: str) -> Callable[..., Any] | None:
    kernel = execute.kernels().get(op_type)
    return getattr(sys.modules.get(getattr(kernel, "__module__", ""), None), name, None)
