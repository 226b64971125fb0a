"""posbench/core/suggest.py: the "did you mean" hint of an unknown name."""

def test_did_you_mean_is_case_insensitive_and_quiet_without_a_close_name():
    from posbench.core.suggest import did_you_mean

    assert did_you_mean("ALiBi", ["alibi", "rope"]) == " (did you mean alibi?)"
    assert did_you_mean("ROPE", ["alibi", "rope", "p_rope"]) == " (did you mean rope or p_rope?)"
    assert did_you_mean("zzz", ["alibi", "rope"]) == ""
