"""Bad input: one line naming the value and what is valid (with the fix where there is one), exit
status 2, and nothing written (no run directory, no Hydra folder, no cache entry). Most cases run the
entry point in this process (fast); a few go through a real interpreter to prove the console behaviour."""

import json
import os

import pytest

from posbench.cli.config import group_options
from posbench.evaluation.protocols import PROTOCOLS
from posbench.evaluation.variants.rope_scaling import evaluable_scalings
from tests.conftest import cli, tree


@pytest.fixture
def here(tmp_path, cache_dir, monkeypatch):
    """A working folder that must stay empty: a refused command writes nothing."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- one line, with the fix ------------------------------------------------------------------------


@pytest.mark.parametrize("program, argv, expected", [
    ("train", ["encoding=rope,alibi"], "encoding=rope,alibi gives several values: add -m to run one job for each "
                                       "(posbench-train -m encoding=rope,alibi)"),
    ("train", ["eval.multiples=1,2"], "eval.multiples=1,2 gives several values: add -m to run one job for each "
                                      "(posbench-train -m eval.multiples=1,2); for a list value write eval.multiples=[1,2]"),
    # the suggested command keeps the user's other overrides (quoted for the shell where needed)
    ("train", ["model=tiny", "encoding=rope,alibi", "eval.multiples=[1,2]"],
     "encoding=rope,alibi gives several values: add -m to run one job for each "
     "(posbench-train -m model=tiny encoding=rope,alibi 'eval.multiples=[1,2]')"),
    ("eval", ["runs/abc"], "cannot parse override 'runs/abc': name the run as run_dir=runs/abc"),
    ("train", ["encoding=ALiBi"], "unknown encoding 'ALiBi' (did you mean alibi?); valid: "),
    ("train", ["model=tny"], "unknown model 'tny' (did you mean tiny?); valid: base, medium, small, small_canon, small_deltaproduct, small_gdn, small_hybrid, small_mamba2, small_mamba3, tiny"),
    ("train", ["encoding=zzz"], "unknown encoding 'zzz'; valid: alibi, "),
    # Hydra runs one mode at a time (its own message is a traceback)
    ("train", ["-m", "encoding=rope,alibi", "--cfg", "job"],
     "-m and --cfg cannot be combined: give one of them (--cfg job prints one job's config"),
])
def test_errors_keep_the_fix_in_their_one_line(entry, here, program, argv, expected):
    code, err = entry(program, *argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"posbench: error: {expected}"), err
    assert tree(here) == []


TINY = ["model=tiny", "train=smoke", "train_len=16", "eval.multiples=[1,2]", "eval.scored_tokens=256"]


@pytest.fixture
def places(tmp_path, cache_dir, monkeypatch):
    """A runs folder that must stay absent and a cache whose contents must not change."""
    monkeypatch.chdir(tmp_path)  # Hydra must leave nothing in the working folder either
    return tmp_path / "runs", cache_dir


def assert_refused(entry_result, expected, places, program_dir=None):
    code, err = entry_result
    runs, cache = places
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines == [f"posbench: error: {expected}"], err
    assert not runs.exists() and tree(runs.parent) == [], tree(runs.parent)


TRAIN_CASES = [
    # typos that Hydra's own hint (+key=...) would let through silently
    ("+train.stpes=5", "unknown config key 'train.stpes' (did you mean steps?); valid keys of train: batch_size, beta1, beta2, budgets, checkpoint_every, "
     "cooldown, cooldown_shape, grad_clip, log_every, lr, min_lr_ratio, random_positions, random_positions_kind, schedule, steps, val_batches, "
     "val_every, warmup_steps, weight_decay"),
    ("+trainlen=32", "unknown config key 'trainlen' (did you mean train_len or train?); valid keys at the top level: attention, compile, data, device, "
     "encoding, eval, evaluate_after_training, extend, logger, model, precision, retry_diverged, runs_dir, seed, task, threads, train, train_len"),
    ("+eval.multipless=[1,2]", "unknown config key 'eval.multipless' (did you mean multiples?); valid keys of eval: attention_examples, attention_stats, batch_tokens, bca, during_training, first_scored, "
     "lceg_stride, multiples, press_stride, protocols, published_docs, rope_factor, rope_scaling, scored_tokens, segment, stride, target_docs, target_tokens, temperature, variants"),
    # Hydra's and OmegaConf's multi-line errors
    ("train.stpes=5", "unknown config key 'train.stpes' (did you mean steps?); valid keys of train: batch_size, beta1, beta2, budgets, checkpoint_every, "
     "cooldown, cooldown_shape, grad_clip, log_every, lr, min_lr_ratio, random_positions, random_positions_kind, schedule, steps, val_batches, "
     "val_every, warmup_steps, weight_decay"),
    ("trian.steps=10", "unknown config key 'trian' (did you mean train?); valid keys at the top level: attention, compile, "
     "data, device, encoding, eval, evaluate_after_training, extend, logger, model, precision, retry_diverged, runs_dir, seed, task, "
     "threads, train, train_len"),
    # a dotted key where the nested config group is meant: OmegaConf's "str is not a subclass of ..." before
    ("data.tokenizer=bpe", "data.tokenizer=bpe: data.tokenizer is a config group, chosen with a slash: write data/tokenizer=bpe"),
    ("data.tokenizer=bpx", "data.tokenizer=bpx: data.tokenizer is a config group, chosen with a slash (data/tokenizer=<option>), "
     "and 'bpx' is not one of its options (did you mean bpe?); valid: bpe, byte, file, hub"),
    ("data/tokenizer=bpee", "unknown data/tokenizer 'bpee' (did you mean bpe?); valid: bpe, byte, file, hub"),
    ("train_len=1.5", "train_len must be an integer, got '1.5'"),
    ("seed=abc", "seed must be an integer, got 'abc'"),
    ("eval.multiples=[one]", "eval.multiples[0] must be a number, got 'one'"),
    ("train_len=[1", "cannot parse override 'train_len=[1' (no viable alternative at input '[1'); overrides look like "
     "key=value, sweeps like key=a,b"),
    # values that types cannot catch
    ("model.n_heads=3", "model.d_model=128 is not divisible by model.n_heads=3"),
    ("model.vocab_size=50257", "model.vocab_size=50257 contradicts the tokenizer: data.tokenizer=byte has 256 tokens; "
     "leave model.vocab_size unset (null: the tokenizer's) or set it to 256"),
    ("train_len=0", "train_len must be a positive integer, got 0"),
    # numbers the step and token arithmetic cannot hold (Python's ints do not overflow; int64 counts do)
    ("train.steps=99999999999999999999", "train.steps=99999999999999999999 is too large: train.steps x train.batch_size=32 x "
     f"train_len=64 (the training tokens) must fit in a 64-bit integer; valid: 1 .. {(2**63 - 1) // (32 * 64):_}"),
    ("train.schedule=wsd train.budgets=[600,99999999999999999999]", "train.budgets=[600, 99999999999999999999] is too "
     "large: each budget x train.batch_size=32 x train_len=64 (the training tokens) must fit in a 64-bit integer; valid: "
     f"1 .. {(2**63 - 1) // (32 * 64):_}"),
    ("train.batch_size=999999999999999999", "train.batch_size=999999999999999999 is too large: train.batch_size x "
     f"train_len=64 (a step's tokens) must fit in a 64-bit integer; valid: 1 .. {(2**63 - 1) // 64:_}"),
    ("extend.length=256 extend.steps=99999999999999999999", "extend.steps=99999999999999999999 is too large: extend.steps "
     f"x 2048 tokens per step must fit in a 64-bit integer; valid: 1 .. {(2**63 - 1) // 2048:_}"),
    ("seed=-1", "seed must be a non-negative integer, got -1"),
    ("eval.multiples=[1,-2]", "eval.multiples must be positive, got -2; e.g. [1,2,4,8,16]"),
    ("eval.multiples=[1.5]", "eval.multiples=[1.5] must include 1 (the training length, the baseline of every ratio); "
     "e.g. [1,2,4,8,16]"),
    ("eval.multiples=[1,1.3]", "eval.multiples: 1.3 x train_len=64 is 83.2 tokens, not a whole length; use multiples "
     "that give whole lengths, e.g. [1,2,4,8,16]"),
    ("eval.rope_scaling=[yarm]", f"unknown eval.rope_scaling 'yarm'; valid: {', '.join(evaluable_scalings())}"),
    ("eval.rope_factor=0.5", "eval.rope_factor must be at least 1 (or null), got 0.5"),
    ("+encoding.bsae=2", "encoding 'rope' has no parameter 'bsae'; valid: base"),
    ("encoding.bsae=2", "encoding 'rope' has no parameter 'bsae'; valid: base"),  # without +: Hydra's error, same line
    ("task=passkey task.foo=1", "task 'passkey' has no parameter 'foo'; valid: digits, eval_depths, eval_examples, loss"),
    # an encoding without parameters: no "+key" hint that would only lead to another refusal
    ("encoding=nope encoding.foo=1", "encoding 'nope' has no parameters, so 'foo' cannot be set"),
    ("encoding=nope +encoding.foo=1", "encoding 'nope' has no parameters, so 'foo' cannot be set"),
    ("encoding.base=abc", "encoding.base must be a number, got 'abc'"),
    ("encoding.base=0", "encoding.base of 'rope' must be above 1 (and finite), got 0"),
    ("train.lr=-1", "train.lr must be positive, got -1"),
    ("device=gpu", "unknown device 'gpu'; valid: auto, cpu, cuda, cuda:N"),
    ("attention=fast", "unknown attention 'fast'; valid: auto, flex, chunked"),
    ("logger.mode=onlin", "unknown logger.mode 'onlin'; valid: offline, online, disabled"),
    ("data.doc_separator=ab", "data.doc_separator must be one byte (or empty), got 'ab'"),
    # the tokenizer (tests/data/test_tokenizer.py has the rest)
    ("data/tokenizer=bpe model.vocab_size=256", "model.vocab_size=256 contradicts the tokenizer: data.tokenizer=bpe1024 "
     "has 1024 tokens; leave model.vocab_size unset (null: the tokenizer's) or set it to 1024"),
    ("data.tokenizer.kind=wordpiece", "unknown data.tokenizer.kind 'wordpiece'; valid: byte, bpe, file, hub"),
    ("data/tokenizer=bpe data.tokenizer.vocab_size=100", "data.tokenizer.vocab_size must be above 256 (the bytes, which a "
     "byte-level BPE always holds), got 100"),
    ("task=passkey data/tokenizer=bpe", "task passkey builds its examples from byte tokens and needs data.tokenizer=byte "
     "(got bpe1024); use task=lm with a subword tokenizer"),
    ("data/tokenizer=bpe eval.protocols=[fixed_target]", "eval.protocols: fixed_target scores the last tokens of documents, "
     "other text under another tokenizer; with data.tokenizer=bpe1024 use nonoverlapping, sliding or press_sliding"),
    ("data/tokenizer=bpe eval.protocols=[nonoverlapping,lceg_starts]", "eval.protocols: lceg_starts scores whole documents "
     "chosen in tokens, which a text chosen in bytes and then tokenized does not give; with data.tokenizer=bpe1024 use "
     "nonoverlapping, sliding or press_sliding"),
    # a variant that gives this run no row
    ("encoding=alibi eval.rope_scaling=[yarn]", "eval.rope_scaling=[yarn] adds no row for encoding alibi (it applies to decoupled_rope, gated, hope, p_rope, rope, sink, ssmax); "
     "set eval.rope_scaling=[] or use an encoding it applies to"),
    # Hydra's grammar wants quotes around a value with non-ASCII characters
    ("runs_dir=runs/été", "cannot parse override 'runs_dir=runs/été': Hydra's override grammar needs quotes around a value "
     """with non-ASCII characters; write 'runs_dir="runs/été"' (the outer single quotes are for the shell)"""),
    # argparse's usage errors
    ("--foo", "unrecognized arguments: --foo (posbench-train --help lists the flags)"),
    ("--cfg", "argument --cfg/-c: expected one argument (posbench-train --help lists the flags)"),
    ("--info bogus", "argument --info/-i: invalid choice: 'bogus' (choose from 'all', 'config', 'defaults', "
     "'defaults-tree', 'plugins', 'searchpath') (posbench-train --help lists the flags)"),
]


@pytest.mark.parametrize("override, expected", TRAIN_CASES, ids=[c[0] for c in TRAIN_CASES])
def test_bad_train_input_is_one_line_and_writes_nothing(entry, places, override, expected):
    assert_refused(entry("train", f"runs_dir={places[0]}", *override.split()), expected, places)


@pytest.mark.parametrize("argv", [["-m", "seed=0,-1"], ["seed=0,-1", "-m"], ["train_len=16", "-m", "seed=0,-1"]],
                         ids=["-m first", "-m last", "-m between"])
def test_a_bad_seed_refuses_the_sweep_wherever_the_flag_is(entry, places, argv):
    """Flags and overrides in any order: every override is checked (before, an override after -m
    was left out of the check and Hydra then printed its usage)."""
    assert_refused(entry("train", *argv, *TINY[:2], f"runs_dir={places[0]}"), "seed must be a non-negative integer, got -1",
                   places)


@pytest.mark.parametrize("launcher", ["basic", "local_parallel"])
def test_one_bad_cell_refuses_the_whole_sweep_before_anything_trains(entry, places, launcher):
    result = entry("train", "-m", f"hydra/launcher={launcher}", "train_len=64,0,32", *TINY[:2], f"runs_dir={places[0]}")
    assert_refused(result, "train_len must be a positive integer, got 0", places)


@pytest.mark.parametrize(
    "override, group, bad",
    [("encoding=ropee", "encoding", "ropee"), ("encoding=rope,ropee", "encoding", "ropee"),
     ("model=huge", "model", "huge"), ("data=wikitext", "data", "wikitext"), ("experiment=nope", "experiment", "nope"),
     ("data/tokenizer=bpe,bpee", "data/tokenizer", "bpee")],
)
def test_unknown_config_choice_is_one_line_naming_the_valid_ones(entry, places, override, group, bad):
    from posbench.core.suggest import did_you_mean

    options = group_options([])[group]  # the yaml files and the registries (yaml-less built-ins)
    assert_refused(entry("train", "-m", override, f"runs_dir={places[0]}"),
                   f"unknown {group} {bad!r}{did_you_mean(bad, options)}; valid: {', '.join(options)}", places)


@pytest.mark.parametrize("encoding", ["rope", "xpos"])
def test_rotary_encodings_need_an_even_head_dimension(entry, places, encoding):
    result = entry("train", f"encoding={encoding}", "model.d_model=36", "model.n_heads=4", f"runs_dir={places[0]}")
    assert_refused(result, f"{encoding} needs an even head dimension, got d_model/n_heads = 9", places)


def test_runs_dir_that_is_a_file(entry, tmp_path, cache_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    code, err = entry("train", "runs_dir=afile")
    assert code == 2 and err.strip() == "posbench: error: runs_dir=afile is a file, not a folder; give a folder to write runs into"
    assert tree(tmp_path) == ["afile"]


def test_runs_dir_that_is_read_only(entry, tmp_path, cache_dir, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    real_access = os.access
    # root ignores permission bits, so the read-only folder is simulated where the check asks
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(ro) else real_access(p, mode))
    code, err = entry("train", f"runs_dir={ro / 'runs'}")
    assert code == 2
    assert err.strip() == f"posbench: error: runs_dir={ro / 'runs'} is not writable ({ro} is read-only); give a folder you can write to"
    assert tree(ro) == []


def test_unwritable_cache_is_one_line(entry, tmp_path, text_corpus, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("x")
    code, err = entry("train", *TINY, "data=local", f"data.path={text_corpus}", f"data.cache_dir={tmp_path / 'afile' / 'cache'}",
                      f"runs_dir={tmp_path / 'runs'}")
    assert code == 2
    assert err.strip() == (f"posbench: error: cannot write the token cache in '{tmp_path / 'afile' / 'cache'}' (Not a directory); "
                           "set data.cache_dir to a writable folder")
    assert tree(tmp_path) == ["afile"]


def test_unreadable_data_file_is_one_line(entry, tmp_path, cache_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("hello " * 500)
    # reading /proc/self/mem fails with EIO, even for root: an unreadable file that is a regular file
    (docs / "b.txt").symlink_to("/proc/self/mem")
    before = tree(cache_dir)
    code, err = entry("train", *TINY, "data=local", f"data.path={docs}", f"runs_dir={tmp_path / 'runs'}")
    assert code == 2
    assert err.strip() == (f"posbench: error: cannot read data file '{docs / 'b.txt'}': Input/output error; "
                           "fix its permissions or remove it")
    assert tree(cache_dir) == before and not (tmp_path / "runs").exists()


def test_empty_local_corpus_is_one_line_and_leaves_nothing_in_the_cache(entry, tmp_path, cache_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("")
    before = tree(cache_dir)
    code, err = entry("train", *TINY, "data=local", f"data.path={docs}", f"runs_dir={tmp_path / 'runs'}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is empty after splitting" in err
    assert tree(cache_dir) == before  # no temporary folder left behind


def test_missing_local_corpus_is_one_line(entry, places, tmp_path):
    result = entry("train", "data=local", f"data.path={tmp_path / 'nowhere'}", f"runs_dir={places[0]}")
    assert_refused(result, f"data.path {str(tmp_path / 'nowhere')!r} does not exist; give an existing text file or folder", places)


def test_train_len_longer_than_the_validation_data_allows(entry, tmp_path, cache_dir, monkeypatch):
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "small.txt"
    corpus.write_text("tiny corpus " * 200)  # 2,400 bytes: validation gets the last 5%
    before = tree(cache_dir)
    code, err = entry("train", "data=local", f"data.path={corpus}", "train_len=512", f"runs_dir={tmp_path / 'runs'}")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("posbench: error: train_len=512 is longer than the validation split allows (121 tokens)")
    assert not (tmp_path / "runs").exists()
    assert tree(cache_dir) == before  # the token cache the check built is gone with the refusal


# -- posbench-eval --------------------------------------------------------------------------------


@pytest.mark.parametrize("override, expected", [
    ("device=gpu", "unknown device 'gpu'; valid: auto, cpu, cuda, cuda:N"),
    ("device=cuda:0", "device 'cuda:0' asked for, but this torch build sees no CUDA device; use device=cpu or auto"),
    ("eval.multiples=[2,4]", "eval.multiples=[2.0, 4.0] must include 1 (the training length, the baseline of every ratio); e.g. [1,2,4,8,16]"),
    ("eval.protocols=[slidng]", f"unknown eval protocol 'slidng'; valid: {', '.join(PROTOCOLS.names())}"),
    ("+eval.stried=4", "unknown config key 'eval.stried' (did you mean stride?); valid keys of eval: attention_examples, attention_stats, batch_tokens, bca, "
     "during_training, first_scored, "
     "lceg_stride, multiples, press_stride, protocols, published_docs, rope_factor, rope_scaling, scored_tokens, segment, stride, target_docs, target_tokens, temperature, variants"),
    ("eval.rope_scaling=[yarn]", "eval.rope_scaling=[yarn] adds no row for encoding alibi (it applies to decoupled_rope, gated, hope, p_rope, rope, sink, ssmax); "
     "set eval.rope_scaling=[] or use an encoding it applies to"),
    ("--foo", "unrecognized arguments: --foo (posbench-eval --help lists the flags)"),
])
def test_bad_eval_input_is_one_line_and_changes_nothing(entry, trained_run, tmp_path, monkeypatch, override, expected):
    if "cuda" in override:
        import torch

        if torch.cuda.is_available():
            pytest.skip("this machine has CUDA")
    monkeypatch.chdir(tmp_path)
    before = {p: p.read_bytes() for p in trained_run.iterdir() if p.is_file()}
    code, err = entry("eval", f"run_dir={trained_run}", override)
    assert code == 2 and err.strip() == f"posbench: error: {expected}"
    assert {p: p.read_bytes() for p in trained_run.iterdir() if p.is_file()} == before
    assert sorted(os.listdir(tmp_path)) == ["run"]  # nothing new beside the run


def test_eval_of_a_folder_that_is_not_a_run(entry, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = entry("eval", f"run_dir={tmp_path}")
    assert code == 2 and err.strip() == (f"posbench: error: run_dir={tmp_path} is not a run directory (no config.yaml); "
                                         "give a folder that posbench-train made, e.g. runs/<run_id>")
    assert os.listdir(tmp_path) == []


def test_eval_of_a_torn_metrics_file_is_one_line(entry, trained_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (trained_run / "metrics.json").write_text('{"status": "compl')
    code, err = entry("eval", f"run_dir={trained_run}", "eval.multiples=[1]")
    assert code == 2, err
    assert err.splitlines() == [f"posbench: error: {trained_run / 'metrics.json'} is unreadable (Unterminated string starting "
                                "at: line 1 column 12 (char 11)); posbench-train with the run's config trains it again"]
    assert (trained_run / "metrics.json").read_text() == '{"status": "compl'


def test_malformed_but_loadable_checkpoint_is_one_line(entry, trained_run, tmp_path, monkeypatch):
    import torch

    monkeypatch.chdir(tmp_path)
    ckpt = torch.load(trained_run / "checkpoint.pt", weights_only=True)
    ckpt["model"] = {k: v[..., :1] for k, v in ckpt["model"].items()}  # right keys, wrong shapes
    torch.save(ckpt, trained_run / "checkpoint.pt")
    metrics = (trained_run / "metrics.json").read_text()
    # a token set the run lacks (the shared sweep scored 512 tokens), so that the weights are loaded: with every
    # record there posbench-eval loads nothing (tests/cli/test_evaluate.py)
    code, err = entry("eval", f"run_dir={trained_run}", "eval.multiples=[1]", "eval.scored_tokens=256")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("posbench: error: checkpoint does not match its own config (RuntimeError: Error(s) in loading state_dict")
    assert (trained_run / "metrics.json").read_text() == metrics


# -- through a real interpreter ---------------------------------------------------------------------


def test_console_error_is_one_line_exit_2_and_leaves_no_hydra_folder(tmp_path, cache_dir):
    proc = cli("posbench.cli.train", "+train.stpes=5", f"runs_dir={tmp_path / 'runs'}", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert os.listdir(tmp_path) == []


def test_a_successful_single_run_writes_only_its_run_directory(tmp_path, text_corpus, cache_dir):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    cli("posbench.cli.train", *TINY, "train.steps=2", "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}",
        cwd=tmp_path, env={"TMPDIR": str(tmpdir)})
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert sorted(os.listdir(tmp_path)) == ["runs", "tmp"] and not (tmp_path / "runs" / ".hydra").exists()
    cli("posbench.cli.evaluate", f"run_dir={run_dir}", "eval.multiples=[1]", cwd=tmp_path, env={"TMPDIR": str(tmpdir)})
    # no Hydra folder in TMPDIR (torch may keep its own compiler cache there, shared by every process)
    assert sorted(os.listdir(tmp_path)) == ["runs", "tmp"] and set(os.listdir(tmpdir)) <= {"torchinductor_root"}
    assert json.loads((run_dir / "metrics.json").read_text())["schema_version"] == 1


def test_unwritable_home_is_one_line(tmp_path, text_corpus):
    home = tmp_path / "home"
    home.write_text("not a folder")
    env = {"HOME": str(home), "POSBENCH_CACHE": "~/.cache/posbench"}
    proc = cli("posbench.cli.train", *TINY, "data=local", f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}",
               cwd=tmp_path, env=env, check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip() == (f"posbench: error: cannot write the token cache in '{home}/.cache/posbench' "
                                   "(Not a directory); set data.cache_dir to a writable folder")
