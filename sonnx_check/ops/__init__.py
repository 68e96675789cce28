"""Operator rules that are code: one module per operator, named by the catalogue entries that use it."""
