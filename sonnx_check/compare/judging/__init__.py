"""Judging what was observed: the element-wise diff (diff.py), the tolerances and accuracy bounds
(tolerance.py, bounds.py, floats.py), each element's outcome against its bound (element_outcomes.py,
elements.py), the known departures that explain a divergence (known_departures.py), the per-output record
over the datasets (output_record.py), and the findings and verdict of one comparison (verdict.py)."""
