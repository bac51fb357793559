"""`python -m bench.rewards`: the reward endpoint against its bound and a bare openai client."""
