"""Side by side: two systems' answers (or two runs of one system) on a dataset compared
query by query and criterion by criterion: both answers next to each other, each
criterion's outcome on both sides with the criteria that differ first, the group and
checklist scores under the dataset's scoring strategy with the undecided criteria beside
them, and the trajectories through the shared answer view (issue 42, point 1).

A package at the level of answer_pages (pyproject's import contracts): it reads runs' kept
scores and verdicts and the answers' view, and nothing above it reads it. The domain rules
(pairing, filtering, the order of the criteria) are plain Python in `pairing`."""
