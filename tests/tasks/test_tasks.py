"""Synthetic tasks (posbench/tasks), their scoring, attention diagnostics, and task runs end to end."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from posbench.evaluation.task_scores import score_predictions
from posbench.tasks import build_task
from posbench.tasks.mqar import KEYS, VALUES
from posbench.tasks.passkey import NEEDLE, QUESTION

TEXT = np.frombuffer(b"def f(x):\n    return x + 1\n" * 200, dtype=np.uint8)
BASE = ["model=tiny", "train=smoke", "train_len=32", "eval.multiples=[1,2]", "data=local", "threads=1"]


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_passkey_hides_the_key_at_its_depth_and_scores_only_the_key(depth):
    task = build_task("passkey", {"digits": 4})
    tokens, answer = task.example(np.random.default_rng(1), 64, depth, TEXT)
    s = bytes(tokens)
    assert len(tokens) == 65 and answer.sum() == 4 and answer[-4:].all()
    key = s[-4:]
    assert key.isdigit() and s.endswith(QUESTION + key)
    at = s.index(NEEDLE + key + b"|")
    filler = 65 - (len(NEEDLE) + 5) - (len(QUESTION) + 4)
    assert at == round(depth * filler)  # depth: the fraction of the filler before the needle
    # the scored targets (inputs shifted by one) are exactly the key's digits
    assert bytes(tokens[1:][answer]) == key


def test_mqar_follows_zoology_values_without_replacement_answers_only_as_labels_random_filler():
    task = build_task("mqar", {"pairs": 4, "eval_pairs": [4]})
    tokens, answer, targets = task.example(np.random.default_rng(2), 40, 4, TEXT)
    pairs = dict(zip(tokens[0:8:2], tokens[1:8:2]))
    assert set(pairs) <= set(KEYS) and set(pairs.values()) <= set(VALUES) and len(pairs) == 4
    assert len(set(pairs.values())) == 4  # values without replacement
    filler = np.delete(tokens[8:], np.arange(len(tokens) - 8 - 8, len(tokens) - 8, 2))
    assert ((filler >= 1) & (filler < 128)).all() and len(set(filler)) > 5  # random non-query tokens
    queries = tokens[-8::2]
    assert sorted(queries) == sorted(pairs)  # every key asked once, closing the window
    assert list(targets[answer]) == [pairs[k] for k in queries] and answer.sum() == 4
    assert not set(tokens[8:]) & set(VALUES)  # no value after the pairs: the answer is a label only
    assert (targets[~answer] == tokens[1:][~answer]).all()  # elsewhere the targets are the next inputs
    batch = task.batch(np.random.default_rng(2), 2, 40, TEXT, condition=4)
    assert (batch.y[batch.answer] >= 192).all() and not (batch.x[:, 8:] >= 192).any()


def test_mqar_no_binding_baseline_is_what_a_model_answering_unused_window_values_scores():
    """The issue's check: a model that answers each query with a random value of the window it has
    not used yet (54% on average on the old generator) scores the baseline the report shows, 1/n."""
    from posbench.tasks.mqar import no_binding_accuracy

    task = build_task("mqar")
    for n in (2, 4, 8):
        simulated = no_binding_accuracy(task, 64, n, examples=4000, seed=n)
        assert simulated == pytest.approx(task.chance(n), abs=3 * math.sqrt(task.chance(n) / (4000 * n)) + 0.005)


def test_copy_repeats_the_string_after_the_separator():
    task = build_task("copy")
    tokens, answer = task.example(np.random.default_rng(3), 20, None, TEXT)
    s = bytes(tokens)
    assert s[:10] == s[11:] and s[10:11] == b"|" and answer.sum() == 10
    short, _ = task.example(np.random.default_rng(3), 20, 3, TEXT)  # training draws shorter strings, left-padded
    assert (short[:14] == 0).all() and bytes(short[14:17]) == bytes(short[18:])


def test_batches_depend_only_on_the_seed_and_step():
    from posbench.training.trainer import training_batch

    task = build_task("passkey")
    a = training_batch(TEXT, 4, 32, seed=5, step=7, task=task)
    b = training_batch(TEXT, 4, 32, seed=5, step=7, task=task)
    c = training_batch(TEXT, 4, 32, seed=5, step=8, task=task)
    assert all(torch.equal(x, y) for x, y in zip(a, b)) and not torch.equal(a[0], c[0])


def test_exact_match_needs_every_answer_token_and_token_accuracy_counts_each():
    y = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4]])
    answer = torch.tensor([[False, True, True, True], [False, True, True, True]])
    pred = torch.tensor([[9, 2, 3, 4], [1, 2, 0, 4]])  # the first is wrong only where nothing is scored
    assert score_predictions(pred, y, answer) == (1, 5, 6)


def test_the_answer_loss_trains_only_the_answers_and_the_mixed_loss_adds_every_token():
    from posbench.tasks.loss import token_loss

    logits = torch.zeros(1, 3, 5)
    logits[0, 1, 2] = 10.0
    y = torch.tensor([[0, 2, 4]])
    scored = torch.tensor([[False, True, False]])
    answers, every = token_loss(logits, y, scored), token_loss(logits, y, None)
    assert answers.item() < 1e-3 < every.item()
    assert token_loss(logits, y, scored, mixed=True).item() == pytest.approx(answers.item() + every.item())
    assert build_task("passkey").mixed_loss and not build_task("passkey", {"loss": "answer"}).mixed_loss
    assert not build_task("mqar").mixed_loss


@pytest.mark.parametrize("task_name, mixed", [("passkey", True), ("mqar", False)])
def test_training_and_validation_use_the_task_loss(monkeypatch, task_name, mixed):

    import posbench.tasks.base as task_base
    import posbench.training.trainer as trainer
    from posbench.model.transformer import ModelConfig, build_model
    from posbench.training.trainer import TrainConfig

    seen, real = [], task_base.token_loss
    monkeypatch.setattr(task_base, "token_loss", lambda logits, y, scored, m=False: seen.append(m) or real(logits, y, scored, m))
    model = build_model(ModelConfig(name="tiny", d_model=32, n_layers=1, n_heads=2), "nope", {}, 32)
    tc = (TrainConfig(steps=2, batch_size=2, warmup_steps=1, val_batches=1, checkpoint_every=10**6))
    trainer.train_model(model, TEXT, TEXT, tc, 32, 0, torch.device("cpu"), task=build_task(task_name))
    assert len(seen) > 2 and set(seen) == {mixed}  # the training steps and the validation points


def test_chance_levels():
    assert build_task("mqar").chance(1) == 1.0  # one pair: its value is the only one to pick
    assert build_task("mqar").chance(8) == pytest.approx(1 / 8)
    assert build_task("passkey", {"digits": 2}).chance(0.5) == pytest.approx(0.01)
    assert build_task("copy").chance(None) == pytest.approx(1 / 26)


def test_attention_recorder_against_an_explicit_softmax():
    from posbench.evaluation.diagnostics import AttentionRecorder

    torch.manual_seed(0)
    B, H, L, D = 2, 3, 50, 8
    q, k = torch.randn(B, H, L, D), torch.randn(B, H, L, D)
    slopes = torch.tensor([0.5, 0.25, 0.125])
    bias_fn = lambda i, j: -slopes[:, None, None] * (i[:, None] - j[None, :]).clamp(min=0)  # noqa: E731
    rec = AttentionRecorder(1, H)
    import posbench.evaluation.diagnostics as diag

    old, diag.MAX_ELEMENTS = diag.MAX_ELEMENTS, B * H * L * 7  # force several query blocks
    try:
        rec.add(0, q, k, 0.3, bias_fn, torch.arange(L))
    finally:
        diag.MAX_ELEMENTS = old
    s = q @ k.transpose(-1, -2) * 0.3 + bias_fn(torch.arange(L), torch.arange(L))
    s = s.masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1), float("-inf"))
    p = s.softmax(-1)
    dist = (torch.arange(L)[:, None] - torch.arange(L)[None, :]).clamp(min=0)
    want_d = (p * dist).sum(-1).mean(dim=(0, 2))
    want_h = -(p * torch.log(p.clamp_min(1e-30))).sum(-1).mean(dim=(0, 2))
    got = pd.DataFrame(rec.records())
    assert np.allclose(got["mean_distance"], want_d.numpy(), rtol=1e-4)
    assert np.allclose(got["entropy"], want_h.numpy(), rtol=1e-4)


def test_a_model_without_positions_attends_uniformly_to_identical_tokens():
    """NoPE on a constant input: every query sees identical keys, so attention is uniform:
    distance (L - 1) / 4 and entropy ln(i + 1) averaged over queries."""
    from posbench.evaluation.diagnostics import attention_stats, uniform_entropy
    from posbench.model.transformer import ModelConfig, build_model

    model = build_model(ModelConfig(name="tiny", d_model=32, n_layers=2, n_heads=2), "nope", {}, 16).eval()
    stats = attention_stats(model, [torch.full((1, 40), 7)], torch.device("cpu"))
    assert len(stats) == 4
    for r in stats:
        assert r["mean_distance"] == pytest.approx(39 / 4, rel=1e-4)
        assert r["entropy"] == pytest.approx(uniform_entropy(40), rel=1e-4)


def test_a_task_run_trains_evaluates_resumes_and_reports(compose, tmp_path, text_corpus):
    from posbench.jobs.train import run
    from posbench.report.pipeline import build_report
    from posbench.store.identity import run_identity
    from posbench.store.rundir import read_metrics

    args = ["encoding=alibi", "task=passkey", "task.eval_examples=8", "task.eval_depths=[0,1]", *BASE,
            f"data.path={text_corpus}", f"runs_dir={tmp_path / 'runs'}", "eval.attention_stats=true"]
    run_dir = run(compose(*args))
    assert "_passkey_" in run_dir.name
    m = read_metrics(run_dir)
    assert m["status"] == "completed" and m["task"] == "passkey" and m["evaluations"] == []
    cells = {(r["length"], r["condition"]) for r in m["task_evaluations"]}
    assert cells == {(32, 0.0), (32, 1.0), (64, 0.0), (64, 1.0)}
    assert all(r["examples"] == 8 and 0 <= r["exact"] <= r["token_accuracy"] <= 1 for r in m["task_evaluations"])
    assert {(a["length"], a["layer"], a["head"]) for a in m["attention"]} == {(L, l, h) for L in (32, 64) for l in (0, 1) for h in (0, 1)}
    # the evaluation grid is not part of the run: more examples evaluate again, they do not train again
    assert run_identity(compose(*args).resolved()) == run_identity(compose(*args, "task.eval_examples=16").resolved())
    stamp = (run_dir / "checkpoint.pt").stat().st_mtime_ns
    run(compose(*args, "eval.multiples=[1,2,4]"))
    m = read_metrics(run_dir)
    assert (run_dir / "checkpoint.pt").stat().st_mtime_ns == stamp
    assert {r["length"] for r in m["task_evaluations"]} == {32, 64, 128} and {a["length"] for a in m["attention"]} == {32, 64, 128}
    # a language model of the same encoding beside it: the report has both
    run(compose(*[a for a in args if not a.startswith("task")], "eval.protocols=[nonoverlapping]", "eval.scored_tokens=512"))
    report = build_report(tmp_path / "runs", tmp_path / "rep")
    md = report.read_text()
    assert "## Do the models use far context? Synthetic tasks" in md and "## Attention: how far and how spread" in md
    assert "## Perplexity by evaluation length" in md
    assert "**Training budget (passkey):**" in md  # whether the task runs had finished learning
    tasks = pd.read_csv(tmp_path / "rep" / "tasks.csv")
    assert list(tasks["variant"]) == ["alibi"] and list(tasks["task"]) == ["passkey"]
    assert tasks["chance"].tolist() == [pytest.approx(1e-5)]  # five guessed digits
    for name in ("task_accuracy.png", "task_passkey.png", "attention.png"):
        assert (tmp_path / "rep" / name).exists()
    # the perplexity table holds the language model only
    assert len(pd.read_csv(tmp_path / "rep" / "runs.csv")) == 1


def test_runs_that_never_learned_the_task_at_train_len_are_named():
    """Accuracy at 1x below halfway from chance to 100% (mean over the grid, the model's own row):
    its 0% at 16x is no evidence about extrapolation, and the report says which runs these are."""
    from posbench.report.tasks import not_learned

    rows = []
    for seed, acc in ((0, 0.9), (1, 0.2)):
        for depth in (0.0, 1.0):
            for variant, mult in (("rope", 1.0), ("rope", 4.0), ("rope+logn", 1.0)):
                rows.append({"task": "mqar", "variant": variant, "encoding": "rope", "model": "small", "train_len": 64,
                             "seed": seed, "multiple": mult, "condition": depth, "chance": 0.25,
                             "accuracy": acc if mult == 1.0 else 0.0})
    low = not_learned(pd.DataFrame(rows))
    assert low[["variant", "seed"]].values.tolist() == [["rope", 1]] and low["accuracy"].tolist() == [pytest.approx(0.2)]
    rows = [{**r, "accuracy": 0.6} for r in rows]  # 60% is below halfway from a chance of 25%: (0.25 + 1) / 2
    assert not_learned(pd.DataFrame(rows))["seed"].tolist() == [0, 1]


@pytest.mark.parametrize("extra, message", [
    (["task.name=sort"], "unknown task 'sort'; valid: {valid}"),  # the registry's names
    (["task=passkey", "task.digits=0"], "task.digits of 'passkey' must be positive"),
    (["task=passkey", "+task.depth=3"], "task 'passkey' has no parameter 'depth'"),
    (["task=passkey", "task.eval_depths=[1.5]"], "task.eval_depths are fractions in [0, 1], got 1.5"),
    (["task=passkey", "train_len=16"], "task passkey needs windows of at least 21 tokens"),
    (["task=passkey", "task.loss=all"], "task.loss must be one of answer, mixed, got 'all'"),
    (["task=mqar", "eval.during_training=[0.5]"], "set eval.during_training=[] for a task run"),
    (["task=copy", "extend.length=64"], "set extend.length=null for a task run"),
    (["eval.attention_examples=0"], "eval.attention_examples must be a positive integer"),
])
def test_bad_task_settings_are_one_line_errors(compose, tmp_path, text_corpus, extra, message):
    from posbench.core.errors import PosbenchError
    from posbench.tasks import available

    message = message.replace("{valid}", ", ".join(available()))
    with pytest.raises(PosbenchError, match=message.replace("[", r"\[").replace("]", r"\]")):
        (compose(*BASE, *extra, f"data.path={text_corpus}", f"runs_dir={tmp_path}"))
    assert not any(tmp_path.iterdir())


def test_the_answer_loss_keeps_the_ids_of_runs_made_before_task_loss(compose, tmp_path, text_corpus):
    """Task runs trained on the answers alone before ``task.loss`` existed: their ids stand."""
    from omegaconf import open_dict

    from posbench.store.identity import run_id

    cfg = compose("task=mqar", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}", raw=True)
    assert cfg.task.loss == "answer"
    before = cfg.copy()
    with open_dict(before):
        del before.task["loss"]
    assert run_id(cfg) == run_id(before)
    cfg.task.loss = "mixed"
    assert run_id(cfg) != run_id(before)


def test_language_model_runs_keep_their_ids(compose, tmp_path, text_corpus):
    from posbench.store.identity import run_identity

    assert "task" not in run_identity(compose("encoding=rope", *BASE, f"data.path={text_corpus}", f"runs_dir={tmp_path}").resolved())


def test_passkey_answer_distance_is_where_the_needle_lies():
    """task.answer_distance: from the position that predicts the question's first key digit back to
    the needle's first key digit, read off real examples at every depth."""
    import numpy as np

    from posbench.tasks import TASKS

    task = TASKS.get("passkey")(TASKS.get("passkey").Params())
    text = np.frombuffer(b"lorem ipsum dolor sit amet " * 40, np.uint8)
    for length in (64, 100):
        for depth in (0.0, 0.25, 0.5, 0.75, 1.0):
            tokens, answer = task.example(np.random.default_rng(0), length, depth, text)
            first_answer = int(np.flatnonzero(answer)[0])  # targets[t] = tokens[t + 1], predicted at input t
            needle_digit = bytes(tokens).index(b"|key=") + len(b"|key=")
            assert task.answer_distance(length, depth) == first_answer - needle_digit
    assert [task.answer_distance(64, d) for d in (0.0, 0.25, 0.5, 0.75, 1.0)] == [54, 43, 32, 21, 10]


def test_the_task_report_says_which_depths_one_window_reaches():
    """rope_swa at train_len 64 has a window of 16 keys in every layer: only depth 1 (10 back) is within
    one window; irope has a global layer, so the note does not apply to it."""
    import pandas as pd
    from omegaconf import OmegaConf

    from posbench.report.tasks import window_reach

    def cfg(encoding):
        return OmegaConf.create({"encoding": {"name": encoding}, "model": {"name": "small", "d_model": 128, "n_layers": 4,
                                 "n_heads": 4}, "train_len": 64, "task": {"name": "passkey"}})

    runs = pd.DataFrame([{"run_dir": e, "encoding": e, "model": "small", "train_len": 64} for e in ("rope_swa", "irope")])
    reach = window_reach(runs, {"rope_swa": cfg("rope_swa"), "irope": cfg("irope")})
    assert len(reach) == 1 and reach[0]["encoding"] == "rope_swa" and reach[0]["window"] == 16
    assert [c for c, _ in reach[0]["beyond"]] == [0.0, 0.25, 0.5, 0.75] and reach[0]["within"] == [(1.0, 10)]


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
