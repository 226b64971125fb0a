"""posbench/spec.py, typed settings: one conversion from the composed config, the same checks for both
commands, frozen values, saved configs of older runs read through the one migration, and one note
for the rows only some encodings of a sweep get."""

import dataclasses

import pytest

from posbench.evaluation.settings import EvalConfig
from posbench.spec import RunSpec
from posbench.training.trainer import TrainConfig


def test_a_sweep_mixing_encodings_gets_one_note_for_the_rows_some_do_not_get(compose, caplog, tmp_path, monkeypatch):
    import logging

    from posbench.spec import check_variant_rows

    monkeypatch.chdir(tmp_path)
    specs = [compose("model=tiny", f"encoding={e}", "eval.rope_scaling=[yarn,linear]", "eval.temperature=[0.1]")
             for e in ("rope", "alibi", "nope", "rope")]
    with caplog.at_level(logging.WARNING, logger="posbench"):
        check_variant_rows(specs)  # not refused: rope gets the rows
    assert [r.getMessage() for r in caplog.records] == [
        "note: eval.rope_scaling=[yarn,linear] adds rows for rope only; alibi, nope get no such rows"]


TINY = ["model=tiny", "train=smoke", "train_len=16"]


@pytest.mark.parametrize("override", [
    "eval.rope_factor=0.5", "eval.bca=[xpso]", "eval.attention_examples=0", "eval.temperature=[11]",
    "eval.rope_scaling=[yarm]", "eval.during_training=[2]", "eval.stride=0", "eval.first_scored=0",
    "eval.protocols=[]", "eval.multiples=[1,1.3]", "eval.scored_tokens=0", "eval.variants=[nosuchvariant]",
])
def test_posbench_eval_refuses_what_posbench_train_refuses(entry, trained_run, tmp_path, monkeypatch, override):
    """The same line from both commands: they check evaluation settings through the same code."""
    monkeypatch.chdir(tmp_path)
    code_train, err_train = entry("train", *TINY, override, f"runs_dir={tmp_path / 'runs'}")
    code_eval, err_eval = entry("eval", f"run_dir={trained_run}", override)
    assert code_train == code_eval == 2
    assert len(err_train.strip().splitlines()) == 1 and err_train.startswith("posbench: error: ")
    assert err_eval == err_train
    assert not (tmp_path / "runs").exists()


def test_settings_are_frozen_and_typed(compose, tmp_path):
    spec = compose(*TINY, "train.lr=3e-3", f"runs_dir={tmp_path}")
    assert isinstance(spec.train, TrainConfig) and spec.train.lr == 3e-3 and spec.train_len == 16
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.train.lr = 1.0
    assert spec.encoding.params.base == 10000.0  # rope's Params, typed


def test_a_config_saved_before_tasks_and_extend_reads_as_language_modelling(compose, tmp_path):
    saved = compose(*TINY, f"runs_dir={tmp_path}").resolved()
    old = {k: v for k, v in saved.items() if k not in ("task", "extend")}  # what runs saved before those existed
    spec = RunSpec.from_config(old)
    assert spec.task.is_lm and not spec.is_extension
    assert spec.run_id == RunSpec.from_config(saved).run_id


def test_an_unknown_saved_key_is_one_line():
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match=r"^unknown config key 'train.stpes' \(did you mean steps\?\); valid keys of train: "):
        RunSpec.from_config({"encoding": {"name": "nope"}, "train": {"stpes": 5}})


@pytest.mark.parametrize("encoding", ["learned", "t5", "shaw", "sandwich"])
def test_real_valued_random_positions_are_refused_for_an_encoding_that_indexes_a_table(compose, tmp_path, encoding):
    """train.random_positions_kind=float (Random Float Sampling) gives positions no table row has."""
    from posbench.core.errors import PosbenchError

    with pytest.raises(PosbenchError, match=rf"^train.random_positions_kind=float gives real-valued positions, and "
                                            rf"encoding={encoding} indexes a table by position or distance; use"):
        compose(f"encoding={encoding}", "model=tiny", "train=smoke", "train_len=16", "train.random_positions=64",
                "train.random_positions_kind=float", f"runs_dir={tmp_path}").check()
    compose("encoding=alibi", "model=tiny", "train=smoke", "train_len=16", "train.random_positions=64",
            "train.random_positions_kind=float", f"runs_dir={tmp_path}").check()  # computes from positions: accepted


def test_posbench_eval_of_an_extension_run_refuses_a_rope_scaling(compose, tmp_path):
    """posbench-train refuses eval.rope_scaling on an extension run; so does posbench-eval."""
    from posbench.core.errors import PosbenchError

    spec = compose(*TINY, "extend.length=32", "extend.method=yarn", f"runs_dir={tmp_path}")
    with pytest.raises(PosbenchError, match="an extension run is evaluated with its own method"):
        spec.with_eval(EvalConfig(rope_scaling=["yarn"])).check_evaluation()


def test_configs_of_early_runs_still_read(compose, tmp_path):
    """Keys early runs saved and that no longer exist are migrated; their run id is the saved one."""
    from posbench.store.identity import run_id

    saved = compose(*TINY, f"runs_dir={tmp_path}").resolved()
    saved["eval"] |= {"protocol": "nonoverlapping", "windows_at_max": 32}
    saved["train"]["position_lr_mult"] = 10.0
    spec = RunSpec.from_config(saved)
    assert spec.encoding.lr_mult == 10.0 and spec.run_id == run_id(saved)


@pytest.mark.parametrize("hybrid, row", [("rope", "rope"), ("gdn", "small_gdn"), ("qwen3_next", "small_hybrid/p_rope")])
def test_a_row_is_named_by_its_encoding_or_its_layer_pattern(compose, tmp_path, hybrid, row):
    # progress bars and logs name a recurrent row by its model, not by the unused attention encoding
    spec = compose("experiment=hybrids", f"+hybrid={hybrid}", f"runs_dir={tmp_path}")
    assert spec.row == row


def test_build_model_is_the_runs_first_weights_wherever_it_is_built_with_its_method(compose, tmp_path):
    """One place builds a run's model: torch seeded by the run's seed (the same weights whatever the RNG
    state before, other weights for another seed), given weights loaded, an extension run's method on."""
    import torch

    spec = compose(*TINY, "encoding=rope", f"runs_dir={tmp_path}")
    first = spec.build_model().state_dict()
    torch.manual_seed(12345)
    again = spec.build_model().state_dict()
    other = compose(*TINY, "encoding=rope", "seed=1", f"runs_dir={tmp_path}").build_model().state_dict()
    assert all(torch.equal(first[k], again[k]) for k in first)
    assert not torch.equal(first["tok_emb.weight"], other["tok_emb.weight"])
    loaded = spec.build_model(other).state_dict()
    assert all(torch.equal(other[k], loaded[k]) for k in other)
    assert spec.build_model().encoding.extension is None
    child = compose(*TINY, "encoding=rope", "extend.length=32", "extend.method=yarn", f"runs_dir={tmp_path}")
    assert child.build_model(first).encoding.extension == ("yarn", 2.0)
