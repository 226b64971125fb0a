"""The tasks section (posbench/report/sections/tasks.py) explains runs that did not learn by their
initialisation where it does."""

def test_runs_that_did_not_learn_are_explained_by_their_initialisation_where_it_does():
    """FoX and stick-breaking declare what their initialisation does to attention over distance; the
    task report prints it beside their runs that never learned the task (and says nothing for others)."""
    import pandas as pd

    from posbench.report.sections.tasks import _not_learned_text

    low = pd.DataFrame([{"task": "passkey", "variant": v, "model": "small", "train_len": 64, "seed": 0, "accuracy": 0.0}
                        for v in ("fox", "stickbreaking", "rope_swa")])
    text = _not_learned_text(low)
    assert "`fox`: at the authors' initialisation" in text and "`stickbreaking`: at initialisation" in text
    assert "`rope_swa`:" not in text
