"""Talking to LLM judges. client.py is the only module in the project that imports openai."""
