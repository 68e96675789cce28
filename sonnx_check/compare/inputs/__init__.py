"""The data a comparison feeds: the graph inputs that need data and their shapes (specs), the datasets
(seeded random, edge values, the user's files) and the ONNX backend-test folders they are read from and
written to (backend_layout)."""
