"""State passing: the recurrent counterpart of a RoPE extension method (``extend.method=state_passing``).

Buitrago & Gu 2025, "Understanding and Improving Length Generalization in Recurrent Models"
(arXiv 2507.02782, ICML 2025): recurrent models fail past their training length because training
only shows them the states reached from a zero state within T tokens (the "unexplored states
hypothesis"); a short post-training (500 steps, ~0.1% of pre-training) in which each sequence
starts from a non-zero state fixes it. Their State Passing (SP) starts each sequence from the final
state of another sequence (the previous batch's); their TBTT (truncated back-propagation through
time) starts it from the final state of the previous segment of the same text. In posbench:

    posbench-train model=small_gdn encoding=nope train_len=64 extend.method=state_passing extend.length=256 extend.steps=100

an extension run (posbench/training/extend.py) of a finished parent that fine-tunes on windows of
train_len, as PoSE and DroPE do, where batch row b of step s is the (s mod K)-th window of a stretch
of K = extend.length / train_len consecutive windows (posbench/data/batches.py ``stream_batch``),
and every recurrent layer starts it from the state (recurrence and short-convolution inputs) its
window of step s - 1 ended in, detached (posbench/mixers/state.py ``StateCarry``): the state is
passed for K windows, reset to zeros at each stretch's start. Attention layers of a hybrid see their
window of train_len as always. Its rows are named ``<encoding>+state_passing@<K>x+ft<steps>``.

Deviations from the paper, and why:
* TBTT, not SP over unrelated sequences: the windows a state is passed through are consecutive text
  (the paper's TBTT variant, which it reports works as SP does), so that the passed state is one a
  model reaches on a long text, and the stretch of K x train_len tokens names the length the run
  extends to, as extend.length does for a RoPE method. The state is reset every K windows (the paper
  passes it on without end): with K x train_len the target, the states seen are those of the target
  length; document boundaries do not reset it (the corpus's separators are in the text, as attention
  sees them).
* The whole layer state is passed: the recurrence's and the short convolutions' last inputs (the
  paper passes the recurrent state; with the convolution's, two windows read with the state passed
  equal one window of both, tests/mixers/test_state.py).
* No noise-initialised variants (the paper's Random / Fitted Noise) and no post-training of released
  checkpoints: a posbench parent is trained from scratch at train_len, then fine-tuned for
  extend.steps steps at the parent's tokens per step and end learning rate (extend.py).
* Validation during the fine-tune reads the parent's validation windows from a zero state, so its
  val_loss stays comparable to every other run's; the evaluation scores from a zero state too.
"""

from __future__ import annotations

from posbench.core.errors import PosbenchError
from posbench.data.batches import stream_batch
from posbench.mixers import ATTENTION, Mixer, mixer_class
from posbench.model.transformer import ModelConfig
from posbench.tasks.lm import LanguageModelling
from posbench.training.data import VALIDATION_SEED

METHOD = "state_passing"


def segments(length: int, train_len: int) -> int:
    """K: the windows of train_len a state is passed through (extend.length / train_len)."""
    return length // train_len


def check(model: ModelConfig) -> None:
    """State passing needs a recurrent layer, every one able to pass its state (a plug-in with
    ``forward`` only cannot); extend.length > train_len is ExtendConfig.check's."""
    names = [m for m in model.layer_mixers() if m != ATTENTION]
    if not names:
        raise PosbenchError(f"extend.method={METHOD} passes a recurrent layer's state, and model={model.name} has "
                            f"none (model.mixers={list(model.mixers)}); use a model with gdn or mamba2 layers, "
                            "e.g. model=small_gdn")
    if cant := sorted({n for n in names if not mixer_class(n).passes_state()}):
        raise PosbenchError(f"extend.method={METHOD}: mixer {cant[0]!r} implements forward only, not forward_with_state "
                            "(docs/extending.md), so it has no state to pass")


def start(model, k: int) -> None:
    """Turn on every recurrent layer's carry: the state passed through ``k`` windows, then reset."""
    for module in model.modules():
        if isinstance(module, Mixer):
            module.carry.start(k)


class StreamedLanguageModelling(LanguageModelling):
    """Language modelling on the stream of consecutive windows (``stream_batch``); validation keeps
    the parent's windows (the trainer draws them with VALIDATION_SEED), read from a zero state."""

    def __init__(self, params, segments: int):
        super().__init__(params)
        self.segments = segments

    def training_batch(self, tokens, batch_size, length, seed, step):
        if seed == VALIDATION_SEED:
            return super().training_batch(tokens, batch_size, length, seed, step)
        return (*stream_batch(tokens, batch_size, length, self.segments, seed, step), None)


def stream_task(task, k: int):
    """The fine-tune's task: language modelling on the stream of ``k`` consecutive windows."""
    return StreamedLanguageModelling(task.params, k)
