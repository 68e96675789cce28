"""Evidence for a certification dossier: the record of a run (record.py) and what it is built from: the
model's identity (identity.py), the environment, the specification revision the rules encode, the verdict
of every rule at every node (verdicts.py) and the comparison's datasets and margins (comparison.py)."""
