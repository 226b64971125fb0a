"""Helpers shared by several test files: tiny models with their encodings' parameters moved off their
initial values, one layer's inputs and attention output, the whole-matrix attention formula with HF's
mask functions, a rotation by hand, and the extension overrides."""

import importlib.util
import os
import signal
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from posbench.attention.options import AttentionOptions
from posbench.encodings.rope import apply_rotation, rotation_tables
from posbench.model.transformer import ModelConfig, build_model
from posbench.report.analysis import sweep

CFG = ModelConfig(name="t", d_model=32, n_layers=4, n_heads=4, mlp_ratio=2)


def model_of(name, params=None, train_len=16, cfg=CFG):
    torch.manual_seed(0)
    model = build_model(cfg, name, params or {}, train_len).double().eval()
    with torch.no_grad():  # move learned parameters off their (often zero) initial values
        for p in model.encoding.parameters():
            p.add_(torch.randn_like(p) * 0.3)
    return model


def layer_inputs(model, x, layer=0):
    """(ln1 input of ``layer``, q, k, v [B, H, L, Dh]) as the model computes them."""
    h = model.tok_emb(x)
    for block in model.blocks[:layer]:
        h, _ = block(h, model.encoding.at(block.attn.layer), torch.arange(x.shape[1]),
                  model.encoding.at(block.attn.layer).prepare(torch.arange(x.shape[1]), AttentionOptions()), AttentionOptions())
    a = model.blocks[layer].ln1(h)
    B, L, D = a.shape
    q, k, v = model.blocks[layer].attn.qkv(a).view(B, L, 3, CFG.n_heads, D // CFG.n_heads).permute(2, 0, 3, 1, 4)
    return a, q, k, v


def attn_output(model, x, layer=0, options=AttentionOptions()):
    """The attention sub-layer's output of ``layer`` (after the output projection)."""
    a, *_ = layer_inputs(model, x, layer)
    enc, pos = model.encoding.at(layer), torch.arange(x.shape[1])
    return model.blocks[layer].attn(a, enc, pos, enc.prepare(pos, options), options)


def naive(scores, v, visible, sink=None):
    """softmax over the visible keys (plus a sink logit per head, gpt-oss style) @ v, whole L x L."""
    scores = scores.masked_fill(~visible, float("-inf"))
    if sink is not None:
        scores = torch.cat([scores, sink.view(1, -1, 1, 1).expand(*scores.shape[:-1], 1)], dim=-1)
    p = scores.softmax(-1)
    return (p[..., :-1] if sink is not None else p) @ v


def hf_visible(kind, size, L):
    """HF transformers' mask functions: causal_mask_function + sliding_window_overlay
    (kv > q - window) or chunked_overlay (kv // chunk == q // chunk)."""
    q, kv = torch.arange(L)[:, None], torch.arange(L)[None, :]
    causal = kv <= q
    if kind is None:
        return causal
    return causal & ((kv > q - size) if kind == "sliding" else (kv // size == q // size))


def _rot(x, pos, inv):
    cos, sin = rotation_tables(pos, inv)
    return apply_rotation(x, cos, sin)


TINY = ModelConfig(name="t", d_model=32, n_layers=2, n_heads=4)


def tiny_model(name: str, train_len: int = 32):
    torch.manual_seed(0)
    return build_model(TINY, name, {}, train_len).eval()


def ext(*extra):
    return ["extend.length=64", *extra]


def scored_targets(plan, L):
    """Set of (target index, context tokens before it) for every scored token of a plan."""
    out = {}
    for end, k, first in zip(plan.ends, plan.scored, plan.scored_from(L)):
        for j in range(first, first + k):  # window position j predicts stream[end - L + 1 + j] with j tokens before it
            t = int(end) - L + 1 + j
            assert t not in out, "a token scored twice"
            out[t] = j
    return out


def split_of_documents(sizes, seed=0):
    """A validation split: documents of the given sizes (bytes 1..255) separated by zero bytes."""
    rng = np.random.default_rng(seed)
    return np.concatenate([np.append(rng.integers(1, 256, size=n), 0) for n in sizes]).astype(np.uint8)


def run_section(cls, ctx, folder):
    """One report section built alone into ``folder``: (its markdown, the files it wrote: name -> description)."""
    from posbench.report.drawing.document import render
    from posbench.report.section import SectionOutput

    section, written = cls(), {}
    blocks = section.build(ctx, SectionOutput(folder, section, written))
    md, _ = render(blocks, folder, "t")
    return md, written


def records(budget_ppl, seeds=3):
    """Made-up runs of several training budgets: {(variant, steps): (ppl 1x, ppl 2x)} -> evaluation records of
    completed runs, one run per seed and budget, with their budgets (posbench/report/analysis/sweep.py)."""
    out = []
    for (variant, steps), ppls in budget_ppl.items():
        for seed in range(seeds):
            jitter = 1 + 0.01 * (seed - 1)
            for mult, ppl in zip([1.0, 2.0], ppls):
                out.append(dict(run_id=f"{variant}_{steps}_{seed}", encoding=variant, variant=variant, model="m",
                                train_len=8, seed=seed, status="completed", protocol="nonoverlapping",
                                length=int(8 * mult), multiple=mult, ppl=ppl * jitter, token_set="t", windowed=False))
    evals = pd.DataFrame(out)
    runs = evals[["run_id"]].drop_duplicates()
    runs["train_steps"] = runs["run_id"].str.split("_").str[1].astype(int)
    runs["train_tokens"] = runs["train_steps"] * 256
    return sweep.with_budgets(evals, runs)


def kill_at(proc, pattern, runs_dir, min_step, timeout=600.0, sig=signal.SIGKILL) -> int:
    """SIGKILL (or ``sig``) ``proc`` once a resume state matching ``pattern`` (below runs_dir: ``*/resume.pt`` for a run,
    ``trunks/*/resume.pt`` for a WSD trunk) has reached ``min_step``; returns the step it had. The
    timeout only guards against a hang: on a loaded machine (a sweep beside the suite) reaching step 40
    took over 120 s where it takes 25 s on idle cores. Each state is read once: reading a small model's
    state 100 times a second took CPU from the run it waits for (the resume test, on a loaded machine:
    412 s before, 277 s after)."""
    deadline = time.time() + timeout
    seen: dict = {}  # file -> the (mtime, size) last read: a state is loaded once, not 100 times a second
    while time.time() < deadline:
        for f in runs_dir.glob(pattern):
            try:
                stat = f.stat()
                if seen.get(f) == (stat.st_mtime_ns, stat.st_size):
                    continue
                step = torch.load(f, weights_only=True)["next_step"]
                seen[f] = (stat.st_mtime_ns, stat.st_size)
            except Exception:  # being replaced right now
                continue
            if step >= min_step:
                assert proc.poll() is None, "the run finished before it could be killed"
                os.kill(proc.pid, sig)
                proc.wait()
                return step
        time.sleep(0.01)
    raise AssertionError(f"no {pattern} at step >= {min_step}: {proc.stderr.read() if proc.poll() is not None else ''}")


SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str):
    """``scripts/<name>.py`` as a module (scripts/ is no package), so a test calls its functions in process."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
