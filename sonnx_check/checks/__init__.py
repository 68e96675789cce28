"""Checks over the graph and every node (model, graph, general restrictions); bound to rule IDs by
the catalogue (rules/*.toml), not by importing."""
