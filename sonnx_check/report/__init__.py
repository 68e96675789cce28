"""Reporters: each turns a list of ModelResults into text. They never open models or decide exit codes."""
