"""Sort keys of the kept review queues (KeptQueueRow.sort_key): the queue's order
(evaluation.review.queues; said in Python for the tests in tests/support/queues.py, which
compare the two) written as one string of fixed-width digit fields per item, so
that the string order is the queue order.

One column instead of a 1..N position: a label moves one item (its labels, its human
labels), and only that item's key changes; a position would renumber every item after it.
A page reads `ORDER BY sort_key` (one index), the item after another is the next key, and
"item X of N" counts the keys up to it.

Every field is a non-negative integer padded to its width, so digits compare as numbers
whatever the database's collation.
"""

from __future__ import annotations

LABELS = 6  # a labelling item's human labels, all raters (capped: 999,999 sorts last)
DRAW = 9  # its rank in the label policy's draw, fixed while the runs and policy are
# Disagreement items: evenness as an integer out of EVENNESS (a 2–1 and a 1–2 split give
# the same integer, as exact fractions tie); two distinct
# fractions of up to 30,000 votes differ by more than 1 / EVENNESS, so never tie here.
EVENNESS = 10**9
CONTRADICTING = 6  # human labels contradicting a decided verdict, most first
ID = 12  # answer, checklist and criterion ids
POSITION = 6  # the criterion's place in its checklist


def labelling_key(labels: int, draw: int) -> str:
    """Fewest human labels first, then the policy's draw order (queues.drawn)."""
    return f"{min(labels, 10**LABELS - 1):0{LABELS}d}{draw:0{DRAW}d}"


def labelling_draw(key: str) -> int:
    """The draw rank kept in a labelling key: what stays when the item's labels move."""
    return int(key[LABELS:])


def padded(expression: str, width: int) -> str:
    """SQL: a non-negative integer `expression` as `width` digits with zeros in front. The
    same text in PostgreSQL and SQLite, which share no function for it."""
    text = f"CAST({expression} AS TEXT)"
    return f"substr('{'0' * width}' || {text}, length({text}) + 1)"


def disagreement_key_sql(
    *, split: str, passes: str, fails: str, contradicting: str, answer: str, checklist: str,
    position: str, criterion: str,
) -> str:  # fmt: skip
    """SQL of a disagreement item's key, from the SQL of its facts (column names): split
    votes first, the most even split first, then the most contradicting human labels, then
    answer, checklist, the criterion's position and id."""
    evenness = (
        f"CASE WHEN {passes} + {fails} = 0 THEN {EVENNESS} "
        f"ELSE (abs({passes} - {fails}) * {EVENNESS}) / ({passes} + {fails}) END"
    )  # integer division in both databases: equal fractions give equal integers
    fields = [
        f"CAST(1 - {split} AS TEXT)",
        padded(evenness, len(str(EVENNESS))),
        padded(f"{10**CONTRADICTING - 1} - {contradicting}", CONTRADICTING),
        padded(answer, ID),
        padded(checklist, ID),
        padded(position, POSITION),
        padded(criterion, ID),
    ]
    return " || ".join(fields)
