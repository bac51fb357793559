"""Checklist rewards for reinforcement learning: a completion scored against a query's
submitted checklists by a panel, synchronously, for RL trainers (docs/rewards.md).

| Module | What it holds |
|---|---|
| length_shaping | length normalisation and the over-length penalty (plain Python) |
| reward | criteria verdicts to a reward, under a pluggable scoring strategy (plain Python) |
| request_shapes | the request shapes trainers speak (native, OpenRLHF, NeMo-Gym) to reward items |
| services | the batch: load checklists, run the checks, plan and make the calls, score, record |
| calls | the verdict caches and the judge calls of a batch, all in flight at once |
| quota | the per-token (or per-user) rate limit and daily quota of reward traffic |
| models | RewardBatch (one row per request), RewardAudit, RewardVerdict (the reward cache) |
| api | the three endpoints under /api/rewards/ |
| traffic, views | the dataset's Rewards page: recent traffic, from RewardBatch rows |
| trainers | the trainers' client: TRL's reward function, verl's compute_score (no Django) |
"""
