"""Rows ``rope+<type>@<s>x+tuned`` (static types) and ``rope+dynamic_ntk+tuned``: a RoPE scaling whose own
settings are searched at each length, on held-out text, with the same number of evaluations for every method.

The row beside it, ``rope+<type>@<s>x`` (posbench/evaluation/variants/rope_scaling.py), uses each method at its
authors' defaults; those defaults were chosen for 2K-8K-token Llamas and may not fit a toy model. This row
answers "how much of the gap is the setting?": before it is scored at a length L > train_len, ``fit`` evaluates
``budget`` settings of the method on ``windows`` windows of L tokens of the run's **training split**
(``ev.calibration``, drawn with the seed (505, L): never the validation text that is scored), and the row is
scored with the setting of the lowest held-out loss (the first searched, i.e. the default, on a tie). Up to
train_len the row is the default row (nothing is fitted there).

What each method searches (the default is always the first setting evaluated; its source in brackets):

* ``yarn``: beta_fast (32), beta_slow (1) and the temperature coefficient mscale (1), sqrt(1/t) = 0.1 mscale
  ln s + 1 on q and k [jquesnelle/yarn ``scaled_rope/LlamaYaRNScaledRotaryEmbedding.py``: beta_fast=32,
  beta_slow=1, ``get_mscale`` 0.1 ln s + 1; HF ``_compute_yarn_parameters``: the same defaults, ``mscale`` the
  coefficient of ``get_mscale(scale, mscale)``]. The other settings: a seeded random search (seed 505, the
  same points for every model and length, the first k of a budget the same for any larger budget),
  beta_fast log-uniform in [1, 128], beta_slow log-uniform in [1/32, 4] (redrawn until below beta_fast),
  mscale uniform in [0, 3] (0: no temperature).
* ``ntk``: alpha (s), base' = base alpha^(d/(d-2)) [bloc97's NTK-aware scaling as in jquesnelle/yarn
  ``scaled_rope/LlamaNTKScaledRotaryEmbedding.py``: ``base * alpha ** (dim / (dim-2))``; posbench's ``ntk``
  takes alpha = s]. The other settings: a grid log-spaced over [1, s^2] ([1, 4] for s < 2; alpha 1 is plain
  RoPE), the grid point nearest s replaced by s.
* ``dynamic_ntk``: its scaling factor f (1), base' = base (f L / L_train - (f - 1))^(d/(d-2)) past L_train
  [emozilla's dynamic NTK as in jquesnelle/yarn ``scaled_rope/LlamaDynamicScaledRotaryEmbedding.py``
  (``self.ntk``) and HF ``_compute_dynamic_ntk_parameters`` (``factor``); posbench's ``dynamic_ntk`` is f = 1].
  The other settings: a grid log-spaced over [1/16, 16], the point nearest 1 replaced by 1. At one length
  this is NTK with alpha = 1 + f (L / L_train - 1): a reparametrised alpha, searched on its own grid.
* ``longrope``: the per-pair factors, by LongRoPE's own evolutionary search (dim_mono,
  posbench/attention/longrope.py ``DimMonoSearch.run_exactly``) cut to ``budget`` evaluations, starting from
  the committed factors of this size where there are some (the ``rope+longrope@<s>x`` row's: the default),
  then LongRoPE's first individual (YaRN's ramp in factor space) and YaRN's own frequencies as factors; the
  default is the first of these that exists. The search's seed is (505, L).

Every method thus gets exactly ``budget`` evaluations of held-out loss per length (LongRoPE fewer only if its
search cannot draw a new monotone individual, which the record then shows). What is recorded (each scored
record's ``fit``, posbench/evaluation/perplexity.py): the default and the chosen setting, every searched
setting with its held-out loss, and the spread (min, max) of those losses: the sensitivity band of the method
at that length, on held-out text. The spread of the *scored* perplexity over the settings is not measured (it
would cost ``budget`` scorings of the validation text per length and row); the held-out band is what a reader
needs to tell "the default was unlucky" (default far above the minimum) from "the method is flat here"
(a narrow band).

The objective (``objective``): ``loss`` (default), the mean next-token loss of every position, as LongRoPE's
search (arXiv 2402.13753); or ``needle``, after LongRoPE2 (Shang et al. 2025, arXiv 2502.20082), whose search is
guided by a "needle-driven" perplexity: the loss of the tokens that need far context, not of every token.
Here: ``windows`` passkey examples of L tokens (posbench/tasks/passkey.py: a key of 5 digits planted in filler
from the training split, asked for at the end), the needle depths evenly spread over [0, 1], the loss taken
over the key's answer tokens only (rows ``+tuned-needle``). Deviation, stated: only the abstract and summaries
of LongRoPE2 were read here (no reference code was found for its objective), so the needle format is
posbench's passkey, not the paper's documents; byte-level text only (a subword run is refused in one line).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from functools import partial
from typing import Optional

import numpy as np
import torch
import torch.nn.functional as F

from posbench.attention.longrope import DimMonoSearch, read_table, table_key, yarn_init
from posbench.attention.options import AttentionOptions
from posbench.attention.rope_scalings import ROPE_SCALINGS, RopeScaling, plain_frequencies
from posbench.core.errors import PosbenchError
from posbench.core.params import at_least, one_of, param, positive
from posbench.evaluation.variants import register
from posbench.evaluation.variants.base import Variant, calibration_of, split_windows
from posbench.tasks import build_task

log = logging.getLogger(__name__)

TUNE_SEED = 505  # the held-out windows (TUNE_SEED, L) and the searches' draws: the same length, the same settings
SEARCHED = ("yarn", "ntk", "dynamic_ntk", "longrope")
DEFAULT_BUDGET, DEFAULT_WINDOWS = 16, 8
YARN_BOX = {"beta_fast": (1.0, 128.0), "beta_slow": (1 / 32, 4.0), "mscale": (0.0, 3.0)}
YARN_DEFAULT = {"beta_fast": 32.0, "beta_slow": 1.0, "mscale": 1.0}
DYNAMIC_NTK_BOX = (1 / 16, 16.0)
OBJECTIVES = ("loss", "needle")


# -- the settings each method searches ----------------------------------------------------------------

def _log_grid(lo: float, hi: float, n: int, default: float, key: str) -> list[dict]:
    """n settings of one knob: the default first, then n - 1 points of a log-spaced grid of n over [lo, hi]
    (the point nearest the default in log left out)."""
    grid = np.geomspace(lo, hi, n) if n > 1 else np.array([default])
    nearest = int(np.argmin(np.abs(np.log(grid) - math.log(default))))
    return [{key: float(default)}] + [{key: float(f"{g:.4g}")} for i, g in enumerate(grid) if i != nearest]


def _yarn_settings(n: int) -> list[dict]:
    rng = np.random.default_rng(TUNE_SEED)
    out = [dict(YARN_DEFAULT)]
    while len(out) < n:
        (f_lo, f_hi), (s_lo, s_hi), (m_lo, m_hi) = YARN_BOX.values()
        fast = math.exp(rng.uniform(math.log(f_lo), math.log(f_hi)))
        slow = math.exp(rng.uniform(math.log(s_lo), math.log(s_hi)))
        mscale = rng.uniform(m_lo, m_hi)
        if slow < fast:  # the ramp runs from beta_fast rotations down to beta_slow
            out.append({"beta_fast": float(f"{fast:.3g}"), "beta_slow": float(f"{slow:.3g}"),
                        "mscale": float(f"{mscale:.3g}")})
    return out


def candidate_settings(scaling: str, budget: int, factor: float | None) -> list[dict]:
    """The ``budget`` settings a grid method evaluates at every length, the default first (LongRoPE's come
    from its search at each length: ``TunedScaling.fit``)."""
    if scaling == "yarn":
        return _yarn_settings(budget)
    if scaling == "ntk":
        return _log_grid(1.0, max(factor, 2.0) ** 2, budget, factor, "alpha")  # [1, 4] at least: s = 1 has a grid
    if scaling == "dynamic_ntk":
        return _log_grid(*DYNAMIC_NTK_BOX, budget, 1.0, "factor")
    raise PosbenchError(f"{scaling} has no grid of settings; its settings come from its search")


# -- a setting as a RoPE scaling --------------------------------------------------------------------------

def _yarn(head_dim, base, factor, original_length, length, beta_fast, beta_slow, mscale):
    attention_factor = 1.0 if factor <= 1 else 0.1 * mscale * math.log(factor) + 1.0  # HF get_mscale(s, mscale)
    return ROPE_SCALINGS.get("yarn").compute(head_dim, base, factor, original_length, length, beta_fast=beta_fast,
                                             beta_slow=beta_slow, attention_factor=attention_factor)


def _ntk(head_dim, base, factor, original_length, length, alpha):
    return ROPE_SCALINGS.get("ntk").compute(head_dim, base, alpha, original_length, length)


def _dynamic_ntk(head_dim, base, factor, original_length, length, factor_f):
    # emozilla / HF: base (f L / L_train - (f - 1))^(d/(d-2)) past L_train; ``factor`` here is max(1, L / L_train)
    alpha = 1.0 + factor_f * (max(1.0, length / original_length) - 1.0)
    return ROPE_SCALINGS.get("ntk").compute(head_dim, base, alpha, original_length, length)


def _longrope(head_dim, base, factor, original_length, length, long_factor):
    return ROPE_SCALINGS.get("longrope").compute(head_dim, base, factor, original_length, length,
                                                 long_factor=list(long_factor))


def scaling_at(scaling: str, setting: dict) -> RopeScaling:
    """The registered scaling ``scaling`` at ``setting`` (AttentionOptions.rope takes it in place of a name)."""
    kind = ROPE_SCALINGS.get(scaling)
    if scaling == "yarn":
        compute = partial(_yarn, **setting)
    elif scaling == "ntk":
        compute = partial(_ntk, alpha=setting["alpha"])
    elif scaling == "dynamic_ntk":
        compute = partial(_dynamic_ntk, factor_f=setting["factor"])
    else:
        compute = partial(_longrope, long_factor=tuple(setting["long_factor"]))
    return dataclasses.replace(kind, compute=compute, unavailable=None)


def _unfitted(length: int):
    def compute(*args, **kwargs):
        raise PosbenchError(f"+tuned has no setting chosen at {length} tokens: it is a perplexity row, fitted "
                            "before it is scored (posbench.evaluation.perplexity)")
    return compute


# -- the held-out loss ---------------------------------------------------------------------------------

def heldout_windows(tokens: np.ndarray, length: int, n: int) -> torch.Tensor:
    """n windows of length + 1 tokens of ``tokens`` (the training split), drawn with the seed (TUNE_SEED, L)."""
    return torch.from_numpy(split_windows(np.asarray(tokens), length, n, [TUNE_SEED, length]).astype(np.int64))


def needle_windows(tokens: np.ndarray, length: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n passkey examples of L tokens (posbench/tasks/passkey.py: a key planted in filler of ``tokens``, the
    training split, and asked for at the end) with needle depths evenly spread over [0, 1], drawn with the seed
    (TUNE_SEED, L, 1): (windows [n, L + 1], the key's answer positions [n, L])."""
    task, rng = build_task("passkey"), np.random.default_rng([TUNE_SEED, length, 1])
    examples = [task.example(rng, length, i / max(1, n - 1), np.asarray(tokens)) for i in range(n)]
    return (torch.from_numpy(np.stack([e[0] for e in examples]).astype(np.int64)),
            torch.from_numpy(np.stack([e[1] for e in examples])))


@torch.no_grad()
def heldout_loss(model, windows: torch.Tensor, options: AttentionOptions, batch_tokens: int, device,
                 scored: torch.Tensor | None = None) -> float:
    """Mean next-token loss of ``windows`` [n, L + 1] under ``options``, in batches of about batch_tokens;
    ``scored`` [n, L]: only those targets (the needle objective's key tokens), else every one."""
    n, L = windows.shape[0], windows.shape[1] - 1
    per = max(1, batch_tokens // L)
    total, count = 0.0, 0
    for i in range(0, n, per):
        w = windows[i: i + per].to(device)
        logits = model(w[:, :-1], None, options)
        loss = F.cross_entropy(logits.float().flatten(0, 1), w[:, 1:].flatten(), reduction="none")
        keep = torch.ones_like(loss, dtype=torch.bool) if scored is None else scored[i: i + per].flatten().to(device)
        total, count = total + float(loss[keep].sum()), count + int(keep.sum())
    return total / count


@dataclass(frozen=True)
class Fit:
    """The search at one length: every evaluated setting with its held-out loss, the chosen one's index."""

    settings: list
    losses: list
    chosen: int
    windows: int
    objective: str = "loss"

    def record(self, scaling: str, budget: int) -> dict:
        return {"scaling": scaling, "budget": budget, "evaluations": len(self.settings), "text": "train split",
                "objective": self.objective, "heldout_windows": self.windows,
                "default": self.settings[0], "default_loss": round(self.losses[0], 5),
                "chosen": self.settings[self.chosen], "chosen_loss": round(self.losses[self.chosen], 5),
                "heldout_loss_band": [round(min(self.losses), 5), round(max(self.losses), 5)],
                "searched": [{"setting": s, "heldout_loss": round(v, 5)} for s, v in zip(self.settings, self.losses)]}


def search_settings(scaling: str, budget: int, factor: float | None, loss_of, starts: list | None, length: int,
                    windows: int, objective: str = "loss") -> Fit:
    """Evaluate ``budget`` settings of ``scaling`` with ``loss_of(setting) -> held-out loss`` and choose the
    lowest (the first of equal losses: the default on a tie). LongRoPE's settings come from its search from
    ``starts`` (the first its default), seeded by (TUNE_SEED, length); the others' from ``candidate_settings``."""
    if scaling == "longrope":
        search = DimMonoSearch(lambda f: loss_of({"long_factor": [float(v) for v in f]}), factor,
                               {"step": 0.01, "max_crossover_try": 20}, [TUNE_SEED, length])
        done = search.run_exactly(starts, budget)
        settings = [{"long_factor": [float(v) for v in f]} for f, _ in done]
        losses = [float(v) for _, v in done]
    else:
        settings = candidate_settings(scaling, budget, factor)
        losses = [float(loss_of(s)) for s in settings]
    return Fit(settings, losses, int(np.argmin(losses)), windows, objective)


@register("tuned")
class TunedScaling(Variant):
    linestyle = ":"
    encoding_decides = True  # applies_to reads the encoding only (report/load.py asks it again)

    @dataclass
    class Params:
        scaling: str = "yarn"  # yarn | ntk | dynamic_ntk | longrope
        factor: Optional[float] = param(None, positive)  # s of a static type (as eval.rope_factor); None for dynamic_ntk
        budget: int = param(DEFAULT_BUDGET, at_least(1))  # evaluations of held-out loss per length, every method
        windows: int = param(DEFAULT_WINDOWS, positive)  # held-out windows of L tokens per evaluation
        objective: str = param("loss", one_of(*OBJECTIVES))  # loss: every target; needle: passkey answer tokens only

        def check(self) -> None:
            if self.scaling not in SEARCHED:
                raise PosbenchError(f"+tuned searches the settings of {', '.join(SEARCHED)}; got scaling {self.scaling!r}")
            kind = ROPE_SCALINGS.get(self.scaling)
            if kind.dynamic and self.factor is not None:
                raise PosbenchError(f"RoPE scaling {self.scaling} takes its factor from each length: give no factor "
                                    f"to +tuned (got {self.factor:g})")
            if not kind.dynamic:
                if self.factor is None:
                    raise PosbenchError(f"RoPE scaling {self.scaling} is static: give +tuned its factor "
                                        "(the rope_scaling row's s, e.g. factor: 4)")
                kind.validate(self.factor)

    def __init__(self, params=None):
        super().__init__(params)
        self.fitted: dict[int, Fit] = {}

    @property
    def dynamic(self) -> bool:
        return ROPE_SCALINGS.get(self.params.scaling).dynamic

    @property
    def colour(self) -> str | None:
        return ROPE_SCALINGS.get(self.params.scaling).colour

    def suffix(self) -> str:
        p = self.params
        scaling = f"+{p.scaling}" if self.dynamic else f"+{p.scaling}@{p.factor:g}x"
        return (scaling + ("+tuned" if p.budget == DEFAULT_BUDGET else f"+tuned{p.budget}")
                + ("" if p.objective == "loss" else f"-{p.objective}"))

    def applies_to(self, encoding) -> bool:
        return getattr(encoding, "rope_scalable", False)  # LongRoPE's factors are searched on this model

    def factor_at(self, length: int, train_len: int) -> float:
        return max(1.0, length / train_len) if self.dynamic else float(self.params.factor)

    # -- the search ----------------------------------------------------------------------------------------
    def longrope_starts(self, encoding) -> list[np.ndarray]:
        """The committed factors of this size (the default row's) where there are some and this encoding
        may read them, then LongRoPE's first individual, then YaRN's frequencies as factors."""
        s, d = float(self.params.factor), getattr(encoding, "rotary_dim", encoding.shape.head_dim)
        base, train_len = encoding.params.base, encoding.shape.train_len
        starts = []
        entry = read_table().get(table_key(d, base, train_len, s))
        if entry is not None and getattr(encoding, "longrope", True):
            starts.append(np.asarray(entry["long_factor"], dtype=np.float64))
        starts.append(yarn_init(d, base, train_len, s))
        yarn_inv, _ = ROPE_SCALINGS.get("yarn").compute(d, base, s, train_len, int(s * train_len))
        starts.append(np.clip(np.round((plain_frequencies(d, base) / yarn_inv).numpy(), 2), 1.0, s))
        return starts

    def default_setting(self, encoding) -> dict:
        if self.params.scaling == "longrope":
            return {"long_factor": [float(v) for v in self.longrope_starts(encoding)[0]]}
        return candidate_settings(self.params.scaling, 1, self.params.factor)[0]

    def fit(self, model, ev, length: int, device) -> None:
        if length <= ev.train_len or length in self.fitted:
            return
        p = self.params
        calibration_of(ev, length, "+tuned searches its settings")
        if p.objective == "needle":
            if np.asarray(ev.calibration).dtype != np.uint8:
                raise PosbenchError("+tuned's needle objective plants byte-level passkeys (posbench/tasks/passkey.py); "
                                    "this run's text is not bytes: use objective: loss")
            windows, scored = needle_windows(ev.calibration, length, p.windows)
        else:
            windows, scored = heldout_windows(ev.calibration, length, p.windows), None
        factor = self.factor_at(length, ev.train_len)
        batch_tokens = ev.settings.batch_tokens

        def loss_of(setting: dict) -> float:
            options = ev.options.replace(rope=(scaling_at(p.scaling, setting), factor))
            return heldout_loss(model, windows, options, batch_tokens, device, scored)

        starts = self.longrope_starts(model.encoding) if p.scaling == "longrope" else None
        self.fitted[length] = search_settings(p.scaling, p.budget, p.factor, loss_of, starts, length, p.windows,
                                              p.objective)
        settings, losses, chosen = self.fitted[length].settings, self.fitted[length].losses, self.fitted[length].chosen
        log.info("tuned %s at L=%d: default loss %.4f, chosen %s loss %.4f (band %.4f-%.4f over %d settings)",
                 p.scaling, length, losses[0], settings[chosen] if p.scaling != "longrope" else "factors",
                 losses[chosen], min(losses), max(losses), len(losses))

    def fit_record(self, length: int) -> dict | None:
        f = self.fitted.get(length)
        return None if f is None else f.record(self.params.scaling, self.params.budget)

    def options(self, opts: AttentionOptions, length: int, train_len: int) -> AttentionOptions:
        p, factor = self.params, self.factor_at(length, train_len)
        if length <= train_len:  # nothing fitted there: the default row's scaling
            if p.scaling == "longrope":  # the short factors (all 1), as the default row's, with no table to read
                return opts.replace(rope=(_longrope_at_train_len(), factor))
            return opts.replace(rope=(p.scaling, factor))
        fit = self.fitted.get(length)
        if fit is None:
            return opts.replace(rope=(dataclasses.replace(ROPE_SCALINGS.get(p.scaling), compute=_unfitted(length)), factor))
        if fit.chosen == 0 and p.scaling != "longrope":
            return opts.replace(rope=(p.scaling, factor))  # the default: exactly the rope_scaling row's forward
        return opts.replace(rope=(scaling_at(p.scaling, fit.settings[fit.chosen]), factor))


def _longrope_at_train_len() -> RopeScaling:
    """LongRoPE up to train_len: the short factors (all 1 here), whatever the long ones are."""
    return dataclasses.replace(ROPE_SCALINGS.get("longrope"), unavailable=None,
                               compute=_longrope_short)


def _longrope_short(head_dim, base, factor, original_length, length):
    ones = [1.0] * (head_dim // 2)
    return ROPE_SCALINGS.get("longrope").compute(head_dim, base, factor, original_length, length,
                                                 long_factor=ones, short_factor=ones)

