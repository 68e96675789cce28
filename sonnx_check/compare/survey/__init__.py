"""``--survey``: every profile operator's edge battery against the runtime under test, as a conformance table
(operator x departure IDs x elements, unexplained divergences with their reproducers, refusals).

configurations.py builds each operator's configurations from its declaration, engine.py runs them through
the edge battery and the judge a model's node configurations go through, reproducers.py writes a backend
test case per unexplained divergence, results.py holds what was found (the reports read it).
"""

from __future__ import annotations

from sonnx_check.compare.survey.engine import SurveyRequest, SurveyStopped, run_survey, surveyed_operators
from sonnx_check.compare.survey.results import OperatorSurvey, Survey

__all__ = ["OperatorSurvey", "Survey", "SurveyRequest", "SurveyStopped", "run_survey", "surveyed_operators"]
