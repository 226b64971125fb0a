"""Multi-query associative recall, MQAR (Arora et al. 2023, "Zoology"; their generator:
HazyResearch/zoology, ``zoology/data/associative_recall.py``, ``multiquery_ar``).

n key-value pairs open the window, the gap is filled with random non-query tokens and n queries
close it: each query is a key (all n keys, in a random order) followed by a random non-query
token; the value of each query is its *target*, a label only, never in the input::

    input    k1 v1 k2 v2 ... kn vn  r r r ... r  q1 r q2 r ... qn r
    target                                       v(q1) v(q2) ... v(qn)   (at the queries' positions)

As in Zoology: keys are bytes 128..191 and values bytes 192..255 (disjoint, Zoology's key and value
halves of its vocabulary), keys distinct within an example, values drawn *without* replacement,
the answer only as a label, and random tokens where Zoology's ``random_non_queries`` puts them.
A model that does not bind keys to values therefore cannot beat 1/n per query: it knows the n
values of the window, and nothing tells it which belongs to which key, nor which it has "used"
(``no_binding_accuracy`` simulates such a model; ``chance`` is its exact value). An earlier
generator put each answer into the input and drew values with replacement, so that a model
answering "a value of the window not yet used" scored 75 / 53 / 35% at 2 / 4 / 8 pairs.

Deviations from Zoology: its queries sit at random places of the gap (``power_a`` spacing); here
they close the window, so that a longer window moves the pairs farther from the queries, the
distance an extrapolating model has to bridge. Its random filler is drawn from the whole
vocabulary; here from bytes 1..127, neither keys nor values (a filler key would be a second
occurrence of a key with no value: noise Zoology accepts, and not what is measured here).
Training draws n uniformly from 1..``pairs``; evaluation runs a length x n grid (``eval_pairs``).

What makes the task learnable on a CPU budget (each a setting, so that each can be measured; the
defaults are the generator above). The tiny RoPE model at 4 pairs read 0.39 and 0.36 after 5,000 and
8,000 steps, about its no-binding baseline: more steps alone were not the lever.

* ``alphabet``: keys and values are drawn from the first ``alphabet`` keys and values (64 each by
  default; Zoology's smallest setting, vocabulary 256, has 127 and 128), so that in a small
  alphabet each key and value recurs often enough for the model to learn its embedding.
* ``train_queries``: ``end`` (as evaluated: the queries close the window) or ``zoology``: in training
  only, the queries sit in the gap at distances drawn by Zoology's power law (``_mqar``:
  p(g) proportional to g^(a - 1) over the gap's two-token slots, ``power_a`` = a = 0.01), mostly right
  after the pairs: short distances first. Evaluation always closes the window, the distance an
  extrapolating model must bridge.
* ``curriculum``: the pairs of the training examples rise by stages, as Zoology's training mixes
  4 to 64 pairs: ``curriculum: [4, 8]`` with ``stage_steps: 2000`` trains on up to 4 pairs for 2,000
  steps, up to 8 for the next 2,000, then up to ``pairs`` (posbench/tasks/curriculum.py, shared with
  variable tracking and the algorithmic tasks). With ``alphabet: 16``, ``pairs: 16``, ``curriculum:
  [4, 8]``, ``stage_steps: 500`` and PyTorch's initial weights (``model.init=torch``) the tiny RoPE model
  reads 1.00 at 1x at 4, 8 and 16 pairs after 2,000 steps (one seed; conf/learned/mqar.yaml).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import List

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks import register
from posbench.tasks.curriculum import StagedParams, StagedTask, check_rising, stage_value

KEYS = np.arange(128, 192, dtype=np.uint8)
VALUES = np.arange(192, 256, dtype=np.uint8)
FILLER = np.arange(1, 128, dtype=np.uint8)  # random non-query tokens: neither keys nor values


@register("mqar")
class MQAR(StagedTask):
    condition = "pairs"
    metric = "token_accuracy"  # Zoology's accuracy: the fraction of queries answered right

    @dataclass
    class Params(StagedParams):
        pairs: int = param(8, positive)  # training examples hold 1..pairs key-value pairs
        eval_pairs: List[int] = field(default_factory=lambda: [2, 4, 8])
        alphabet: int = param(64, positive)  # keys (and values) drawn from the first `alphabet` of 64
        train_queries: str = "end"  # end: the queries close the window (as evaluated); zoology: Zoology's gaps
        power_a: float = param(0.01, positive)  # train_queries=zoology: the power law's a (Zoology's default)
        # curriculum (StagedParams): the pairs of the stages before `pairs`, rising; stage_steps: steps per stage

        def check(self) -> None:
            super().check()
            if not 1 <= self.alphabet <= len(KEYS):
                raise PosbenchError(f"task.alphabet must be in 1..{len(KEYS)} (the key and value bytes), got {self.alphabet}")
            every = [self.pairs, *self.eval_pairs, *self.curriculum]
            if bad := [n for n in every if not 1 <= n <= self.alphabet]:
                raise PosbenchError(f"task pairs must be in 1..{self.alphabet} (distinct keys of task.alphabet "
                                    f"{self.alphabet}), got {bad[0]}")
            if self.train_queries not in QUERY_PLACES:
                raise PosbenchError(f"task.train_queries must be one of {', '.join(QUERY_PLACES)}, got {self.train_queries!r}")
            check_rising(self.curriculum, self.pairs, "task.pairs")

    def conditions(self) -> list:
        return list(self.params.eval_pairs)

    def train_condition(self, rng, length):
        return int(rng.integers(1, self.params.pairs + 1))

    def pairs_at(self, step: int) -> int:
        """The most pairs a training example holds at ``step`` (the curriculum's stage, else ``pairs``)."""
        return stage_value(self.params.curriculum, self.params.stage_steps, step, self.params.pairs)

    training = False  # True on the copy that makes training batches (train_queries applies to it only)

    def at_value(self, pairs: int) -> "MQAR":
        staged = type(self)(replace(self.params, pairs=pairs))
        staged.training = True
        return staged

    def at_step(self, step):
        # a copy with the stage's pairs that knows it makes training examples; this task is not changed
        # (validation_batch, StagedTask's: the task as evaluated, no stage, no Zoology gaps)
        return self.at_value(self.pairs_at(step))

    def chance(self, n) -> float:
        """The best accuracy without binding keys to values: 1/n (n distinct values, no answer in
        the input; ``no_binding_accuracy`` checks it by simulation)."""
        return 1 / n

    def min_length(self) -> int:
        return 4 * max(self.params.pairs, *self.params.eval_pairs, *self.params.curriculum)

    def example(self, rng, length, n, text):
        a = self.params.alphabet
        keys = rng.choice(KEYS[:a], size=n, replace=False)
        values = rng.choice(VALUES[:a], size=n, replace=False)
        order = rng.permutation(n)
        pairs = np.stack([keys, values], 1).ravel()
        tokens = np.concatenate([pairs, rng.choice(FILLER, size=length + 1 - 2 * n)])
        if self.training and self.params.train_queries == "zoology":
            at = 2 * n + 2 * zoology_gaps(rng, (length + 1 - 2 * n) // 2, n, self.params.power_a)
        else:
            at = length + 1 - 2 * n + 2 * np.arange(n)  # query i closes the window, a random token after it
        tokens[at] = keys[order]
        targets = tokens[1:].copy()
        targets[at] = values[order]  # the answer: a label at the query's position only
        answer = np.zeros(length, dtype=bool)
        answer[at] = True
        return tokens, answer, targets


QUERY_PLACES = ("end", "zoology")


def zoology_gaps(rng, space: int, n: int, power_a: float) -> np.ndarray:
    """n distinct two-token slots of the gap (0 right after the pairs), drawn as Zoology's ``_mqar``
    draws them: p(g) proportional to (g + 1)^(power_a - 1) for g in 0..space - 1."""
    p = power_a * np.arange(1, space + 1) ** (power_a - 1)
    return rng.choice(space, size=n, replace=False, p=p / p.sum())


def no_binding_accuracy(task: MQAR, length: int, n: int, examples: int, seed: int = 0) -> float:
    """Simulated accuracy of a model that reads the values of the window but not which key each
    belongs to: at each query it answers a value of the window it has not answered yet, at random
    (the strategy that scored 54% on the old generator). Matches ``chance`` (1/n)."""
    rng = np.random.default_rng(seed)
    right = total = 0
    for _ in range(examples):
        tokens, answer, targets = task.example(rng, length, n, None)
        window_values = list(tokens[1 : 2 * n : 2])
        guesses = rng.permutation(window_values)  # one unused value per query
        right += int((targets[answer] == guesses).sum())
        total += int(answer.sum())
    return right / total
