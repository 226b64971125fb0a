"""posbench/report/analysis/prose.py: what the report says of its protocols' scored tokens."""

import pandas as pd

from posbench.report.analysis.prose import protocol_items


def evals(*pairs):
    return pd.DataFrame([{"protocol": p, "token_set": t} for p, t in pairs])


def test_protocols_that_score_the_same_tokens_at_every_length_say_so():
    notes, text = protocol_items(evals(("nonoverlapping", "a"), ("sliding", "a")))
    assert len(notes) == 2 and text.startswith("Each protocol scores the same tokens at every length.")
    assert "can be compared with each other" in text


def test_a_published_protocol_whose_tokens_move_with_the_length_is_named():
    # YaRN's truncated documents score more of each document at each length; LCEG's windows score tokens repeatedly
    _, text = protocol_items(evals(("nonoverlapping", "a"), ("yarn_truncated", "b"), ("lceg_starts", "c")))
    assert "Each protocol scores the same tokens" not in text
    assert "`nonoverlapping` scores the same tokens at every length" in text
    assert "`lceg_starts` and `yarn_truncated` do not" in text or "`yarn_truncated` and `lceg_starts` do not" in text
