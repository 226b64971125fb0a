"""Variable tracking (RULER, Hsieh et al. 2024, "What's the Real Context Size of Your Long-Context Language
Models?", arXiv 2404.06654, multi-hop tracing; reference: NVIDIA/RULER
``scripts/data/synthetic/variable_tracking.py``, ``generate_chains`` and ``generate_input_output``).

Chains of assignments hidden in real text from the corpus (filler as passkey's), then a question::

    <text> |AB=417 <text> |QK=905 <text> |CD=AB <text> |EF=CD <text> |XY=QK ... |?EF=417
                                                                                  ^^^ scored

Each chain starts with a value (``digits`` digits) and assigns it on through ``hops`` variables (names
of ``name_len`` capital letters, distinct); the question names the last variable of one chain and the
answer is the value reached by following its hops back. Statements keep their chain's order, the chains
are interleaved at random (RULER's ``shuffle_sublists_heap``) and placed at sorted random places of the
text (RULER's random depths). Scored: the value's digits, exact match.

Deviations, for a byte-level model trained at tens of tokens: RULER writes ``VAR ABCDE = 12345`` with
five-letter names and five-digit values; here ``|AB=123`` (names and values shorter, no spaces). RULER
asks the reverse question (every variable that holds a value) with one chain; the forward question
(the value of a variable, as the issue asks) needs a second chain, since with one chain the only value
in the window answers it without following a hop. So ``chains`` >= 2 and the baseline is 1/chains: a
model that finds the values of the window but does not follow the chain picks one of them
(``no_tracking_accuracy`` simulates it).

Curriculum (posbench/tasks/curriculum.py): ``curriculum: [1, 2]`` with ``hops: 4`` trains chains of 1 hop
for ``stage_steps`` steps, then 2, then 4, RULER's setting (NVIDIA/RULER ``scripts/synthetic.yaml``, task
``vt``: ``num_chains: 1``, ``num_hops: 4``; two chains here, as said above). A stage's windows hold shorter
chains and more filler; validation and evaluation are at ``hops``.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass, replace

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks import register
from posbench.tasks.base import scatter_in_filler
from posbench.tasks.curriculum import StagedParams, StagedTask, check_rising

LETTERS = np.frombuffer(string.ascii_uppercase.encode(), np.uint8)
DIGITS = np.frombuffer(string.digits.encode(), np.uint8)
MARK, ASSIGN, QUESTION = b"|", b"=", b"|?"


@register("variable_tracking")
class VariableTracking(StagedTask):

    @dataclass
    class Params(StagedParams):
        chains: int = param(2, positive)  # chains in the window: the queried one and chains - 1 distractors
        hops: int = param(2, positive)  # assignments after the value (RULER: 4)
        name_len: int = param(2, positive)  # letters of a variable name (RULER: 5)
        digits: int = param(3, positive)  # digits of a value (RULER: 5)
        loss: str = "mixed"  # as passkey: the language-model loss on the text trains the induction the lookups need
        # curriculum (StagedParams): the hops of the stages before `hops`, rising; stage_steps: steps per stage

        def check(self) -> None:
            super().check()
            check_rising(self.curriculum, self.hops, "task.hops")
            if self.chains < 2:
                raise PosbenchError(f"task.chains must be at least 2 (one chain's value answers without tracking), got {self.chains}")
            if 26 ** self.name_len < self.chains * (self.hops + 1) or 10 ** self.digits < self.chains:
                raise PosbenchError(f"task.name_len={self.name_len} / digits={self.digits} are too short for "
                                    f"{self.chains} chains of {self.hops} hops (names and values are distinct)")

    def chance(self, condition) -> float:
        return 1 / self.params.chains

    def at_value(self, hops: int) -> "VariableTracking":
        return type(self)(replace(self.params, hops=hops))

    def _statement_bytes(self) -> int:
        p = self.params
        value = len(MARK) + p.name_len + len(ASSIGN) + p.digits
        hop = len(MARK) + 2 * p.name_len + len(ASSIGN)
        return p.chains * (value + p.hops * hop)

    def min_length(self) -> int:
        p = self.params
        return self._statement_bytes() + len(QUESTION) + p.name_len + len(ASSIGN) + p.digits - 1

    def chains_of(self, rng):
        """(statements per chain, the names per chain, the values): distinct names and values."""
        p = self.params
        names: list[bytes] = []
        while len(names) < p.chains * (p.hops + 1):
            name = bytes(rng.choice(LETTERS, size=p.name_len))
            if name not in names:
                names.append(name)
        values: list[bytes] = []
        while len(values) < p.chains:
            value = bytes(rng.choice(DIGITS, size=p.digits))
            if value not in values:
                values.append(value)
        chains, chain_names = [], []
        for c in range(p.chains):
            own = names[c * (p.hops + 1):(c + 1) * (p.hops + 1)]
            chains.append([MARK + own[0] + ASSIGN + values[c]]
                          + [MARK + own[j + 1] + ASSIGN + own[j] for j in range(p.hops)])
            chain_names.append(own)
        return chains, chain_names, values

    def example(self, rng, length, condition, text):
        p = self.params
        chains, names, values = self.chains_of(rng)
        # interleave the chains at random, each in its order (RULER's shuffle_sublists_heap)
        order = rng.permutation(np.repeat(np.arange(p.chains), p.hops + 1))
        nxt = [0] * p.chains
        statements = []
        for c in order:
            statements.append(chains[c][nxt[c]])
            nxt[c] += 1
        question = QUESTION + names[0][-1] + ASSIGN + values[0]
        tokens = scatter_in_filler(rng, text, statements, question, length)
        answer = np.zeros(length, dtype=bool)
        answer[-p.digits:] = True
        return tokens, answer


def no_tracking_accuracy(task: VariableTracking, length: int, examples: int, text: np.ndarray, seed: int = 0) -> float:
    """Simulated exact match of a model that reads the values of the window but does not follow a chain:
    it answers one of them at random. Matches ``chance`` (1/chains)."""
    rng = np.random.default_rng(seed)
    k, nl = task.params.digits, task.params.name_len
    value_statement = re.compile(rb"\|[A-Z]{%d}=([0-9]{%d})" % (nl, k))
    right = 0
    for _ in range(examples):
        tokens, _ = task.example(rng, length, None, text)
        values = sorted(set(value_statement.findall(bytes(tokens[:-k]))))
        right += int(values[rng.integers(len(values))] == bytes(tokens[-k:]))
    return right / examples
