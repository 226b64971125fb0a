"""Key tokens (Fang et al. 2024, LongPPL): the tokens whose loss falls when the keys past
train_len are added (each row's full pass against its window control ``+swaL``), their perplexity and
the far-context gain on them.

frames.py  the selection rule (RULES), the per-multiple table and the loss-by-distance curves
section.py the key-token section (its table and figure)
"""
