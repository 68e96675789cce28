"""The node edge battery: each distinct node configuration run alone on edge values (battery.py), the small
model that holds the configurations (lone_model.py), the operators' own edge values (values.py) and the
model's constants a configuration keeps (model_constants.py)."""
