"""A needle without literal match (NoLiMa: Modarressi et al. 2025, "NoLiMa: Long-Context Evaluation Beyond
Literal Matching", arXiv 2502.05167; reference adobe-research/NoLiMa, whose needle set is on the Hugging
Face hub, not readable here: the design below is the paper's).

NoLiMa's needle and question share no content word: the needle ``Actually, Yuki lives next to the Semper
Opera House.`` is found by the question ``Which character has been to Dresden?`` only through what the
model knows (the opera house is in Dresden), and the answer is the character, Yuki. A model trained from
scratch knows nothing of the world, so here the world is a fixed table of ``pairs`` landmark-city pairs
(drawn once from ``WORLD_SEED``, the same in every example and every run), which training teaches as
pretraining teaches a language model that the Semper Opera House is in Dresden::

    <text> |amy lives by qe. <text> |ben lives by ko. <text> |WHO SAW RT?amy
                                                                        ^^^ scored: the name

Landmarks are ``word_len`` lowercase letters, cities ``word_len`` capitals (each city is not its
landmark in capitals, so no case-folding match either), names lowercase, the needle's words lowercase
and the question's capitals: the needle and the question share no byte but the separators ``|`` and
space (tests/tasks/test_nolima.py checks it on every example). ``needles`` needles per window, names and
landmarks distinct, at sorted random places of real text (the corpus's, as passkey's filler); the
question asks for the city of one of them. A model that finds the needles but not the association names
one of them: ``chance`` 1 / needles.

``order``: ``name_first`` is NoLiMa's needle, the name before the landmark; ``name_last`` puts it right
after (``|by qeamy.``, asked ``|WHO SAW RTamy``: the city, then the answer). The order matters to a causal
model: a name before the landmark is read by no position that also knows the landmark unless a layer
first carries it forward, while a name right after it is found as an induction head finds a value
right after its key (MQAR's layout), the key matched through the learned table. Measured (tiny RoPE
model, PyTorch's initial weights, one seed): ``name_first`` stayed at chance at 1x (exact 0.59 after
1,500 steps at ``word_len`` 2; 0.47 after 3,000 at ``word_len`` 1), and so did a name three bytes after
the landmark (``|by q: amy.`` asked ``|WHO SAW R: ``; 0.48, and 0.48 with the literal question too),
and the name right after it in letters (0.45). Learned with both levers: ``order: name_last`` and
``symbols: bytes`` read 1.00 at 1x after 2,500 steps (0.41 at 2x), where NoLiMa's order with bytes read
0.52 (conf/learned/nolima.yaml).

``symbols: bytes`` (with ``word_len: 1``): landmark and city are single bytes of 128..255, which no text
holds, as MQAR's keys and values are (posbench/tasks/mqar.py): the needle's key and the question's key
are different tokens that map to each other through the fixed pairing. ``letters`` (the default) write
them in letters, as the text around them is written.

``literal: true`` is NoLiMa's literal-match control: the question names the landmark itself
(``|WHO SAW qe?``), the needle found by matching its bytes, as in a plain needle-in-a-haystack test.

Deviations from NoLiMa: the latent association is learned from the task's own training examples, not
world knowledge (the fixed table); one hop (NoLiMa also has two-hop needles); needles and questions from
one template each (NoLiMa: several templates and keyword pairs); distractor needles (NoLiMa's base set
has one needle; its distractor variant adds a literal-match distractor) so that a model that does not
use the association is at 1 / needles, not at 1.
"""

from __future__ import annotations

import functools
import string
from dataclasses import dataclass

import numpy as np

from posbench.core.errors import PosbenchError
from posbench.core.params import param, positive
from posbench.tasks import register
from posbench.tasks.base import Task, scatter_in_filler

WORLD_SEED = 2025  # the landmark-city table: one world for every example and run
NAMES = (b"amy", b"ben", b"cat", b"dev", b"eli", b"fin", b"gus", b"ida")
LOWER = np.frombuffer(string.ascii_lowercase.encode(), np.uint8)


ORDERS = ("name_first", "name_last")
SEPARATORS = frozenset(b"| ")  # the only bytes a needle and its question share


def needle(name: bytes, landmark: bytes, order: str = "name_first") -> bytes:
    """NoLiMa's order (``name_first``: ``|amy lives by qe.``) or the name right after the landmark
    (``name_last``: ``|by qeamy.``)."""
    return b"|" + name + b" lives by " + landmark + b"." if order == "name_first" else b"|by " + landmark + name + b"."


def question(place: bytes, order: str = "name_first") -> bytes:
    """``|WHO SAW RT?`` (``name_first``) or ``|WHO SAW RT`` (``name_last``: the answer right after the city,
    as the needle's name right after its landmark)."""
    return b"|WHO SAW " + place + (b"?" if order == "name_first" else b"")


SYMBOLS = ("letters", "bytes")
LANDMARK_BYTES, CITY_BYTES = 128, 192  # symbols: bytes: landmarks 128..191, cities 192..255 (as MQAR's keys, values)


@functools.cache
def world(pairs: int, word_len: int, symbols: str = "letters") -> tuple[tuple[bytes, bytes], ...]:
    """The fixed (landmark, city) table: distinct lowercase landmarks, distinct capital cities, no city its
    own landmark in capitals; or (``symbols: bytes``) landmark i the byte 128 + i and its city a byte of
    192..255 by a fixed permutation (bytes no text holds, as MQAR's keys and values)."""
    if symbols == "bytes":
        cities = np.random.default_rng([WORLD_SEED, pairs]).permutation(64)[:pairs]
        return tuple((bytes([LANDMARK_BYTES + i]), bytes([CITY_BYTES + int(c)])) for i, c in enumerate(cities))
    rng = np.random.default_rng([WORLD_SEED, pairs, word_len])
    landmarks: list[bytes] = []
    cities: list[bytes] = []
    while len(landmarks) < pairs:
        landmark = bytes(rng.choice(LOWER, size=word_len))
        city = bytes(rng.choice(LOWER, size=word_len)).upper()
        if landmark not in landmarks and city not in cities and city != landmark.upper():
            landmarks.append(landmark)
            cities.append(city)
    return tuple(zip(landmarks, cities))


@register("nolima")
class NoLiMa(Task):

    @dataclass
    class Params(Task.Params):
        pairs: int = param(8, positive)  # landmark-city pairs of the world
        word_len: int = param(2, positive)  # letters of a landmark and of a city
        needles: int = param(2, positive)  # needles per window: the asked one and needles - 1 distractors
        literal: bool = False  # NoLiMa's control: the question names the landmark itself
        order: str = "name_first"  # name_first: NoLiMa's |amy lives by qe.; name_last: |by qeamy.
        symbols: str = "letters"  # letters: landmarks and cities of word_len letters; bytes: one byte each, 128-255
        loss: str = "mixed"  # as passkey: the language-model loss on the text trains the induction lookups need

        def check(self) -> None:
            super().check()
            if not 1 <= self.needles <= min(self.pairs, len(NAMES)):
                raise PosbenchError(f"task.needles must be in 1..{min(self.pairs, len(NAMES))} (distinct landmarks of "
                                    f"task.pairs={self.pairs} and names), got {self.needles}")
            if self.order not in ORDERS:
                raise PosbenchError(f"task.order must be one of {', '.join(ORDERS)}, got {self.order!r}")
            if self.symbols not in SYMBOLS:
                raise PosbenchError(f"task.symbols must be one of {', '.join(SYMBOLS)}, got {self.symbols!r}")
            if self.symbols == "bytes" and (self.pairs > 64 or self.word_len != 1):
                raise PosbenchError(f"task.symbols=bytes takes one byte per landmark and city (word_len 1) and at most "
                                    f"64 pairs, got word_len={self.word_len}, pairs={self.pairs}")
            if 26 ** self.word_len < 2 * self.pairs:
                raise PosbenchError(f"task.word_len={self.word_len} is too short for {self.pairs} distinct pairs")

    def chance(self, condition) -> float:
        return 1 / self.params.needles

    def min_length(self) -> int:
        p = self.params
        return (p.needles * len(needle(NAMES[0], b"x" * p.word_len, p.order)) + len(question(b"X" * p.word_len, p.order))
                + len(NAMES[0]) - 1)

    def parts(self, rng) -> tuple[list[bytes], bytes, bytes]:
        """(the needles, the question, the answer) of one example."""
        p = self.params
        table = world(p.pairs, p.word_len, p.symbols)
        chosen = rng.choice(p.pairs, size=p.needles, replace=False)
        names = [NAMES[i] for i in rng.choice(len(NAMES), size=p.needles, replace=False)]
        needles = [needle(n, table[i][0], p.order) for n, i in zip(names, chosen)]
        asked = int(rng.integers(p.needles))
        landmark, city = table[chosen[asked]]
        return needles, question(landmark if p.literal else city, p.order), names[asked]

    def example(self, rng, length, condition, text):
        needles, q, name = self.parts(rng)
        tail = q + name
        tokens = scatter_in_filler(rng, text, needles, tail, length)
        answer = np.zeros(length, dtype=bool)
        answer[-len(name):] = True
        return tokens, answer
