"""Reporters: each turns a list of ModelResults into text. They never open models or decide exit codes."""

# Terminal columns below which long tables and statements take several lines per row or model (80 is
# common): the comparison table becomes blocks and the coverage statement its counts.
NARROW_TERMINAL = 150
