"""What a comparison found, as typed records: from the engine (``sonnx_check.compare``) to every reader.

The reports, the evidence record and the verdict class read these records' attributes; ``to_json()`` writes
the JSON every machine format carries (its keys are kept as they were). The package imports nothing but the
standard library, so a static check and a report that never compares import no comparison code.
"""

from sonnx_check.results.divergence import Divergence
from sonnx_check.results.edges import Battery, BatterySummary, ConfigurationResult, NodeAccounting
from sonnx_check.results.models import (
    ComparisonOutcome,
    DatasetEntry,
    EndToEnd,
    NodeResult,
    NotComparedNode,
    ReferenceRecord,
    RuntimeRecord,
    Stop,
)
from sonnx_check.results.outputs import (
    Accuracy,
    DatasetTally,
    ExplainedBy,
    FirstMismatch,
    KnownDeparture,
    OutputResult,
)

__all__ = [
    "Accuracy",
    "Battery",
    "BatterySummary",
    "ComparisonOutcome",
    "ConfigurationResult",
    "DatasetEntry",
    "DatasetTally",
    "Divergence",
    "EndToEnd",
    "ExplainedBy",
    "FirstMismatch",
    "KnownDeparture",
    "NodeAccounting",
    "NodeResult",
    "NotComparedNode",
    "OutputResult",
    "ReferenceRecord",
    "RuntimeRecord",
    "Stop",
]
