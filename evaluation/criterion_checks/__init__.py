"""How a criterion is graded beyond its text: a deterministic trajectory check with
structured parameters, and the evidence an LLM judge decides against (docs/judging.md).
Kept on the evaluation side (CriterionCheck, one-to-one to annotation's Criterion)."""
