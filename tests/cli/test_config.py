"""Every preset and every sweep cell composes and passes every check, without training anything
(posbench/cli/config.py, posbench/cli/app.py): the fast guard that a config edit breaks no experiment
(the slow test in end_to_end/test_sweep.py trains them)."""

from pathlib import Path

import pytest

from posbench.cli.app import compose_jobs
from posbench.cli.config import CONF_DIR
from posbench.cli.config import to_spec as validate
from posbench.encodings import ModelShape, available, build_encoding


@pytest.mark.slow  # composes the extension preset's 240 jobs (about 30 s on 2 cores), like LARGE below
def test_the_preset_pairs_each_fine_tune_with_a_model_trained_at_the_target(cache_dir):
    from collections import Counter

    from posbench.cli.app import compose_jobs

    jobs = compose_jobs("config", ["experiment=extension"], multirun=True)
    kinds = Counter((c.encoding.name, c.train_len, c.extend.length, c.extend.method) for c in jobs)
    assert {k for k in kinds if k[2] == 256} == {("rope", 64, 256, "linear"), ("rope", 64, 256, "ntk"),
                                                 ("rope", 64, 256, "yarn"), ("rope", 64, 256, "llama3"),
                                                 ("rope", 64, 256, "longrope"), ("rope", 64, 256, "abf"),
                                                 ("rope", 64, 256, "pose"), ("rope", 64, 256, "drope"),
                                                 ("rope", 64, 256, "none"),
                                                 ("alibi", 64, 256, "none"),
                                                 ("nope", 64, 256, "none"), ("kerple_log", 64, 256, "none")}
    # the control: every encoding continued at its own train_len for the same steps
    assert {k for k in kinds if k[2] == 64} == {(e, 64, 64, "none") for e in ("rope", "alibi", "nope", "kerple_log")}
    scratch = [c for c in jobs if c.extend.length is None]
    assert {(c.encoding.name, c.train_len) for c in scratch} == {(e, 256) for e in ("rope", "alibi", "nope", "kerple_log")}
    # the same tokens per step as the parents (32 x 64), and one token set for both train_lens
    assert {c.train.batch_size * c.train_len for c in jobs} == {32 * 64}
    assert {c.eval.first_scored for c in jobs} == {16 * 256} and {c.eval.segment for c in jobs} == {1024}


def test_the_tokenizers_preset_pairs_each_tokenizer_with_its_steps(cache_dir):
    from posbench.cli.app import compose_jobs
    from posbench.cli.config import to_spec

    specs = [to_spec(c) for c in compose_jobs("config", ["experiment=tokenizers"], multirun=True)]
    arms = {(s.data.tokenizer.label, s.train.steps, s.model.vocab_size) for s in specs}
    assert arms == {("byte", 1000, 256), ("bpe1024", 386, 1024)}
    assert {s.encoding.name for s in specs} == {"nope", "rope", "alibi", "t5", "kerple_log", "fire", "fox"}
    assert all(s.eval.variants == ["local"] and s.train_len == 64 for s in specs)


PRESETS = sorted(p.stem for p in (Path(CONF_DIR) / "experiment").glob("*.yaml"))


N = len(available())  # the presets that sweep every encoding grow with the registry


EXPECTED_JOBS = {"algorithmic": 144, "far_context_tasks": 96, "alibi_paper": 8, "all_encodings": N, "budget": 36, "budget_lr": 48,
                 "converged": 20, "extension": 240, "hybrids": 36, "lr_grid": 6 * N, "map": 21, "map_lr": 56,
                 "modern": 72, "quick": 5, "reference": 6 * N, "rope_extension": 1, "swan": 9, "tasks": 30,
                 "tokenizers": 42, "mqar_levers": 6, "rope_base": 15, "learned_tasks": 126,
                 "frontier2": 42}


# the largest sweeps compose hundreds of jobs (25-40 s each on 2 cores; modern's 72, 12 s): run with -m slow
LARGE = {"extension", "reference", "lr_grid", "modern", "algorithmic", "far_context_tasks", "learned_tasks"}


@pytest.mark.parametrize("preset", [pytest.param(p, marks=pytest.mark.slow) if p in LARGE else p for p in PRESETS])
def test_every_preset_composes_into_valid_jobs(preset, cache_dir):
    jobs = compose_jobs("config", [f"experiment={preset}"], multirun=True)
    assert len(jobs) == EXPECTED_JOBS[preset]
    for cfg in jobs:
        validate(cfg)
    if preset in ("all_encodings", "reference", "lr_grid"):
        assert sorted({cfg.encoding.name for cfg in jobs}) == available()
    if preset.startswith("budget"):  # each job a trunk and its branches, every row with its window control
        assert {(cfg.train.schedule, tuple(cfg.train.budgets)) for cfg in jobs} == \
            {("wsd", (600, 1200, 2400, 4800) if preset == "budget" else (1200,))}
        assert {cfg.model.name for cfg in jobs} == {"small"} and len({cfg.encoding.name for cfg in jobs}) == 12
        if preset == "budget":
            assert {cfg.seed for cfg in jobs} == {0, 1, 2} and list(jobs[0].eval.variants) == ["local"]


def test_the_map_s_lines_hold_tokens_per_step_and_its_grid_takes_each_model_s_rates(cache_dir):
    """experiment=map: every job a WSD trunk with 600- and 1200-step branches and its window control; a
    length's line (scripts/budget_commands.py --map) keeps 2048 tokens a step; map_lr's rates per model
    come from the command line, which replaces the preset's grid."""
    jobs = compose_jobs("config", ["experiment=map"], multirun=True)
    assert {(c.train.schedule, tuple(c.train.budgets), c.model.name, c.train_len, c.train.batch_size) for c in jobs} == \
        {("wsd", (600, 1200), "small", 64, 32)}
    assert list(jobs[0].eval.variants) == ["local"] and list(jobs[0].eval.protocols) == ["nonoverlapping"]
    line = compose_jobs("config", ["experiment=map", "encoding=rope", "train.lr=0.002", "model=small", "train_len=256",
                                   "train.batch_size=8", "data=pydocs", "seed=0,1"], multirun=True)
    assert len(line) == 2 and {c.train_len * c.train.batch_size for c in line} == {2048}
    assert {c.data.name for c in line} == {"pydocs"}
    base = compose_jobs("config", ["experiment=map_lr", "model=base", "train.lr=1e-3,2e-3,4e-3", "train.budgets=[300]"],
                        multirun=True)
    assert len(base) == 42 and {c.train.lr for c in base} == {1e-3, 2e-3, 4e-3}
    assert {tuple(c.train.budgets) for c in base} == {(300,)} and {c.seed for c in base} == {0, 1}


def test_the_hybrids_preset_puts_each_layer_pattern_beside_the_attention_rows(cache_dir):
    """experiment=hybrids: pure recurrent and hybrid rows beside seven attention rows, each a
    WSD trunk with two budgets and the window control; another model size keeps every row's pattern."""
    specs = [validate(c) for c in compose_jobs("config", ["experiment=hybrids"], multirun=True)]
    rows = {(s.model.name, tuple(s.model.layer_mixers()), s.encoding.name) for s in specs}
    hybrid = ("gdn", "gdn", "gdn", "attention")
    assert rows == {("small_gdn", ("gdn",) * 4, "nope"), ("small_mamba2", ("mamba2",) * 4, "nope"),
                    ("small_hybrid", hybrid, "p_rope"), ("small_hybrid", hybrid, "nope"),
                    ("small_samba", ("mamba2", "attention") * 2, "rope_swa"),
                    *{("small", ("attention",) * 4, e) for e in ("nope", "rope", "alibi", "fox", "rnope_swa", "path", "path_fox")}}
    assert {(s.train.schedule, tuple(s.train.budgets), s.train_len, s.seed) for s in specs if s.model.name == "small_gdn"} \
        == {("wsd", (600, 1200), 64, seed) for seed in (0, 1, 2)}
    assert all(list(s.eval.variants) == ["local"] for s in specs)
    assert {(s.encoding.params.fraction, s.encoding.params.mode) for s in specs if s.encoding.name == "p_rope"} == \
        {(0.25, "neox")}
    tiny = compose_jobs("config", ["experiment=hybrids", "+hybrid=gdn", "seed=0", "model=tiny"], multirun=True)
    assert [(c.model.d_model, list(c.model.mixers)) for c in tiny] == [(64, ["gdn"])]


def test_the_frontier2_preset_puts_the_new_rows_beside_their_baselines(cache_dir):
    """experiment=frontier2: the 2025-26 rows at the map's point (WSD branches, window control, the common
    rate), DeltaProduct at n_h 1, 2, 3 with negative eigenvalues, Mamba-3 beside Mamba-2; the study
    script's other lines compose (flip_flop's learned setting, parity, integer and real random positions)."""
    specs = [validate(c) for c in compose_jobs("config", ["experiment=frontier2", "seed=0"], multirun=True)]
    attention = {s.encoding.name for s in specs if s.model.name == "small"}
    assert attention == {"nope", "rope", "alibi", "tape", "comrope", "cable", "sink", "gated", "ssmax"}
    recurrent = {s.model.name: (tuple(s.model.layer_mixers()), dict(s.model.mixer_params)) for s in specs if s.model.name != "small"}
    assert recurrent == {**{f"small_deltaproduct_nh{n}": (("deltaproduct",) * 4, {"deltaproduct": {"householder": n, "neg_eigval": True}})
                            for n in (1, 2, 3)},
                         "small_mamba2": (("mamba2",) * 4, {}), "small_mamba3": (("mamba3",) * 4, {})}
    assert {(s.train.schedule, tuple(s.train.budgets), s.train.lr, s.train_len, tuple(s.eval.variants)) for s in specs} == \
        {("wsd", (600, 1200), 0.002, 64, ("local",))}
    tasks = [validate(c) for c in compose_jobs("config", ["experiment=frontier2", "+learned=flip_flop", "train.budgets=[]",
                                                          "eval.variants=[]", "+hybrid=mamba3", "seed=0"], multirun=True)]
    assert [(s.task.name, s.train.steps, s.model.init, s.model.name, s.train_len) for s in tasks] == \
        [("flip_flop", 1000, "torch", "small_mamba3", 64)]
    parity = [validate(c) for c in compose_jobs("config", ["experiment=frontier2", "task=parity_check", "model.init=torch",
                                                           "train.steps=1000", "train.budgets=[]", "eval.variants=[]",
                                                           "+hybrid=rope,deltaproduct_nh3", "seed=0"], multirun=True)]
    assert [(s.task.name, s.model.name, s.train.steps, tuple(s.train.budgets)) for s in parity] == \
        [("parity_check", "small", 1000, ()), ("parity_check", "small_deltaproduct_nh3", 1000, ())]
    randpos = [validate(c) for c in compose_jobs("config", ["experiment=frontier2", "+hybrid=rope", "train.random_positions=2048",
                                                            "train.random_positions_kind=integer,float", "seed=0"], multirun=True)]
    assert [s.train.random_positions_kind for s in randpos] == ["integer", "float"]


def test_the_learned_tasks_preset_trains_each_task_at_its_own_setting(cache_dir):
    """experiment=learned_tasks: each task at the window, budget, initial weights, curriculum and model size of
    its conf/learned/ file, the same for every row; one row composed here (the whole sweep: the slow test above)."""
    specs = [validate(c) for c in compose_jobs("config", ["experiment=learned_tasks", "+hybrid=rope", "seed=0"], multirun=True)]
    got = {s.task.name: (s.train_len, s.train.steps, s.model.init, list(getattr(s.task.params, "curriculum", [])), s.model.name)
           for s in specs}
    assert got == {"mqar": (64, 2000, "torch", [4, 8], "tiny"), "reverse_string": (64, 3000, "torch", [4, 8, 16], "small"),
                   "duplicate_string": (64, 1000, "torch", [], "tiny"), "flip_flop": (64, 1000, "torch", [], "tiny"),
                   "babi": (128, 1500, "torch", [], "tiny"), "nolima": (64, 2500, "torch", [], "tiny")}
    assert all(s.encoding.name == "rope" and s.task.params.eval_examples == 32 for s in specs)
    # a task's own model size keeps a recurrent row's pattern (small_gdn at the small shape)
    (gdn,) = compose_jobs("config", ["experiment=learned_tasks", "+learned=reverse_string", "+hybrid=gdn", "seed=0"], multirun=True)
    assert (gdn.model.name, gdn.model.d_model, list(validate(gdn).model.layer_mixers())) == ("small_gdn", 128, ["gdn"] * 4)
    mqar = next(s for s in specs if s.task.name == "mqar").task.params
    assert (mqar.pairs, mqar.alphabet, mqar.eval_pairs, mqar.stage_steps) == (16, 16, [4, 8, 16], 500)
    rows = compose_jobs("config", ["experiment=learned_tasks", "+learned=flip_flop", "seed=0"], multirun=True)
    assert sorted((c.encoding.name, tuple(validate(c).model.layer_mixers())) for c in rows) == sorted(
        [(e, ("attention", "attention")) for e in ("nope", "rope", "alibi", "t5", "fox")]
        + [("nope", ("gdn", "gdn")), ("nope", ("gdn", "attention"))])


def test_presets_are_all_known():
    assert sorted(EXPECTED_JOBS) == PRESETS, "a new preset needs its job count here"


@pytest.mark.parametrize("group", ["encoding", "task", "model", "train", "logger"])
def test_every_group_option_composes_and_validates(group, cache_dir):
    for option in sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml")):
        overrides = [f"{group}={option}"]
        text = (Path(CONF_DIR) / group / f"{option}.yaml").read_text()
        if group == "model" and "mixers:" in text and "attention" not in text.split("mixers:")[1].split("\n")[0]:
            overrides.append("encoding=nope")  # a model of recurrent layers only takes no positional encoding
        (cfg,) = compose_jobs("config", overrides, multirun=False)
        validate(cfg)


def test_a_sweep_expands_like_hydras_basic_sweeper(cache_dir):
    jobs = compose_jobs("config", ["encoding=nope,alibi", "train_len=32,64", "seed=3"], multirun=True)
    assert [(c.encoding.name, c.train_len, c.seed) for c in jobs] == [
        ("nope", 32, 3), ("nope", 64, 3), ("alibi", 32, 3), ("alibi", 64, 3)]


def test_the_swan_preset_is_rnope_swa_with_the_logn_row_beside_rope_and_nope(cache_dir):
    """SWAN-GPT (arXiv 2504.08719) composed: the rnope_swa pattern, its global layers scaled by the
    logn row, and the window control."""
    specs = [validate(c) for c in compose_jobs("config", ["experiment=swan"], multirun=True)]
    assert sorted({s.encoding.name for s in specs}) == ["nope", "rnope_swa", "rope"]
    assert all(list(s.eval.variants) == ["logn", "local"] and s.train_len == 64 for s in specs)
    enc = build_encoding("rnope_swa", ModelShape(128, 4, 4, 64))
    assert [enc.at(i).window(i) is None for i in range(4)] == [False, False, False, True]  # logn reaches layer 3 only
