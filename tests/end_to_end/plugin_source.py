"""The source of a plug-in package that tests install outside the repository (tests/end_to_end/test_plugins.py):
an encoding, an evaluation variant and a task, written as a user would, against posbench's public
interfaces only. It is never imported from here; test_plugins.py copies this text into packages."""

from dataclasses import dataclass

import numpy as np
import torch

from posbench.encodings import ModelShape, PositionalEncoding
from posbench.tasks import Task
from posbench.variants import Variant  # the plug-in API's old path, kept as a re-export


class LogDistanceBias(PositionalEncoding):
    """A score bias -slope_h * ln(1 + (i - j)) (a KERPLE-log-like decay with fixed slopes)."""

    family = "plug-in family"  # no colour: the report derives one from the name
    uses_bias = True
    translation_invariant = True

    @dataclass
    class Params:
        slope: float = 1.0

    def __init__(self, shape: ModelShape, params):
        super().__init__(shape, params)
        self.register_buffer("slopes", params.slope * torch.linspace(0.5, 2.0, shape.n_heads), persistent=False)

    def bias(self, q_pos, k_pos, layer):
        dist = (q_pos[:, None] - k_pos[None, :]).clamp(min=0).to(self.slopes.dtype)
        return -self.slopes[:, None, None] * torch.log1p(dist)


class WideWindow(Variant):
    """Blockwise causal attention with blocks of ``blocks`` x train_len (a wider +bca)."""

    linestyle = "--"
    colour = "#123456"

    @dataclass
    class Params:
        blocks: int = 1

    def suffix(self):
        return f"+wide{self.params.blocks}"

    def options(self, opts, length, train_len):
        return opts.replace(block=self.params.blocks * train_len)


class FirstLetter(Task):
    """A window of random letters whose last prediction must be the window's first letter."""

    metric = "exact"

    @dataclass
    class Params(Task.Params):
        pass

    def example(self, rng, length, condition, text):
        tokens = rng.integers(97, 123, size=length + 1).astype(np.uint8)
        tokens[-1] = tokens[0]
        answer = np.zeros(length, dtype=bool)
        answer[-1] = True
        return tokens, answer

    def chance(self, condition):
        return 1 / 26
