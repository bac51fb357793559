"""Blind pairwise preference (issue 42): sessions that pair two systems' answers to the same
query, the reviewers' votes on them ("Answer 1 / Answer 2", positions drawn per pair and
reviewer), and the figures drawn from those votes (win rates, Bradley–Terry, agreement)."""
