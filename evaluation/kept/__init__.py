"""Figures kept between requests: events -> counters -> readers.

Writers say what happened: `events.bump(dataset_id, Event.LABEL)` (site-wide renames:
`bump_all`). One table, `events.MOVES`, says which of the dataset's review counters
(`counters.Counter`, the ReviewRevision row) each event moves: a label of a system answer
moves NUMBER only, its adjudication NUMBER and SCORES, a new system answer ANSWERS only, a
change of structure or an import every figure's. Label and adjudication writers bump
explicitly (review services, imports); criteria, queries, names and answers have many
writers and bump by signal (`receivers`). A new bulk writer must bump itself.

Readers declare what they read (`readers.Figure`: agreement NUMBER, queues NUMBER and
ANSWERS, run scores SCORES, cross-evaluation CROSS_EVALUATION (and PERFECT_LABELS when
counted from human labels), analytics NUMBER, run-only figures none), and
`readers.state` builds every figure's state: those counters, the runs it reads and the
caller's facts. `figures` keeps a value per state in KeptFigure rows
(columns: kind, run, part, revision; the key is the state's hash); a new state replaces
the rows of the figure's slot. Queue orders are rows under such a header (review.kept);
refresh markers and back-off records are KeptRefresh rows (kept.refresh), per run and
group, or per dataset and group for the figures of no run (queues, cross-evaluation, the
agreement without a run). A cold figure is never counted in a request (kept.cold).

Consistency: `bump` is an upsert of the counter row inside the writer's transaction; it
locks the row until commit, so the new counters commit with the write, and no other
writer's bump interleaves (agreement.delta moves the kept agreement counts under that lock).
"""
