"""Importing this package registers every check with the registry (one module per scope)."""

from sonnx_check.checks import general, graph, max, maxpool, model  # noqa: F401
