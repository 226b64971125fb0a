"""posbench/report/records/checks.py: what the report reads from a run is checked first, so that a damaged run is
skipped with one line naming the field, never a traceback in the middle of a table."""

import pandas as pd
import pytest

from posbench.report.records.checks import (
    check_history,
    check_per_position,
    check_records,
    parse_config,
    pooled_encoding_settings,
)

RECORD = {"variant": "rope", "protocol": "sliding", "length": 16, "multiple": 1.0, "ppl": 5.0, "token_set": "t"}


def metrics(**change):
    return {"model": "tiny", "task": None, "train_steps": 20, "train_tokens": 2560, "final_val_loss": 1.5,
            "evaluations": [RECORD], **change}


def test_good_records_pass_and_records_older_than_a_field_are_kept():
    check_records(metrics())
    check_records(metrics(evaluations=[{k: v for k, v in RECORD.items() if k != "token_set"}]))  # before token sets
    check_records(metrics(evaluations=[{**RECORD, "ppl": None}]))  # not defined at that length


@pytest.mark.parametrize("change, message", [
    ({"model": 3}, "'model' is 3, not a string"),
    ({"evaluations": "none"}, "'evaluations' is not a list of records"),
    ({"evaluations": [{**RECORD, "length": 0}]}, "evaluations record 0 has length 0, not a positive integer"),
    ({"evaluations": [{k: v for k, v in RECORD.items() if k != "protocol"}]}, "evaluations record 0 has no 'protocol'"),
    ({"attention": [{"source": "text"}]}, "attention record 0 has no 'length'"),
])
def test_a_bad_field_is_named(change, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        check_records(metrics(**change))


def test_histories_curves_and_configs_are_checked():
    history = check_history(pd.DataFrame({"step": [1, 2], "loss": [3.0, None], "val_loss": [None, None]}))
    assert history["val_loss"].isna().all() and pd.api.types.is_numeric_dtype(history["loss"])
    with pytest.raises(ValueError, match="loss 'low' is not a number"):
        check_history(pd.DataFrame({"step": [1], "loss": ["low"]}))
    with pytest.raises(ValueError, match="is not a curve of numbers"):
        check_per_position({"rope/sliding/L16": pd.Series(["a"]).to_numpy()})
    assert parse_config("encoding: {name: rope}\ntrain: {lr: 0.002}\n").encoding.name == "rope"
    for text, message in [("", "is empty"), ("[1, 2]", "is not a mapping"), ("train: {lr: 1}", "has no encoding.name"),
                          ("encoding: {name: rope}\ntrain: {lr: fast}", "has no number train.lr")]:
        with pytest.raises(ValueError, match=message):
            parse_config(text)


def test_runs_trained_on_randomized_positions_beside_plain_ones_are_one_row_pooled():
    """A run trained with train.random_positions has a plain-position row named as the plain runs' row;
    two such settings in one row are named, a learning-rate grid's lr_mult and an older config's missing
    setting are not."""
    def cfg(random_positions=None, **encoding):
        return parse_config(f"encoding: {{name: rope, lr_mult: {encoding.pop('lr_mult', 1.0)}}}\n"
                            f"train: {{lr: 0.002, random_positions: {'null' if random_positions is None else random_positions}}}\n")
    runs = pd.DataFrame({"run_id": list("abcd"), "run_dir": list("abcd"), "status": "completed", "encoding": "rope",
                         "model": "tiny", "train_len": 64, "task": "bucket_sort"})
    plain = {d: cfg() for d in "abcd"}
    assert pooled_encoding_settings(runs, plain) is None
    assert pooled_encoding_settings(runs, {**plain, "c": cfg(lr_mult=10.0)}) is None  # a learning-rate grid's
    message = pooled_encoding_settings(runs, {**plain, "c": cfg(1024), "d": cfg(1024)})
    assert "(encoding rope, model tiny, train_len 64, task bucket_sort) differ in train.random_positions (1024: 2, null: 2 runs)" in message
    assert "--where train.random_positions=VALUE" in message


def test_integer_and_real_random_positions_in_one_row_are_named():
    """Integer and real random positions (train.random_positions_kind) both name their row +randpos: one
    folder of both would pool them as seeds of one row (seen in frontier2's first script). A config written
    before the kind existed reads as integer, and plain runs' kind is not compared."""
    def cfg(random_positions, kind=None):
        kind_text = "" if kind is None else f", random_positions_kind: {kind}"
        return parse_config(f"encoding: {{name: rope}}\ntrain: {{lr: 0.002, random_positions: {random_positions}{kind_text}}}\n")
    runs = pd.DataFrame({"run_id": list("abcd"), "run_dir": list("abcd"), "status": "completed", "encoding": "rope",
                         "model": "small", "train_len": 64, "task": None})
    message = pooled_encoding_settings(runs, {"a": cfg(2048, "integer"), "b": cfg(2048, "integer"), "c": cfg(2048, "float"),
                                              "d": cfg(2048, "float")})
    assert "differ in train.random_positions_kind ('float': 2, 'integer': 2 runs)" in message
    assert pooled_encoding_settings(runs, {"a": cfg(2048), "b": cfg(2048, "integer"), "c": cfg(2048), "d": cfg(2048)}) is None
    assert pooled_encoding_settings(runs, {"a": cfg("null", "float"), "b": cfg("null", "integer"), "c": cfg("null"),
                                           "d": cfg("null")}) is None


def test_a_t5_config_older_than_bias_scale_is_read_at_the_value_it_had():
    runs = pd.DataFrame({"run_id": list("abc"), "run_dir": list("abc"), "status": "completed", "encoding": "t5",
                         "model": "small", "train_len": 64, "task": None})
    old = parse_config("encoding: {name: t5}\ntrain: {lr: 0.004}\n")  # before bias_scale: the unscaled table
    new = parse_config("encoding: {name: t5, bias_scale: none}\ntrain: {lr: 0.004}\n")
    sqrt = parse_config("encoding: {name: t5, bias_scale: sqrt_dhead}\ntrain: {lr: 0.004}\n")
    assert pooled_encoding_settings(runs, {"a": old, "b": new, "c": new}) is None
    assert "differ in encoding.bias_scale ('none': 2, 'sqrt_dhead': 1 runs)" in \
        pooled_encoding_settings(runs, {"a": old, "b": new, "c": sqrt})
