"""``posbench-export RUN_DIR OUT_DIR``: a trained posbench ``rope`` or ``nope`` run as a transformers
checkpoint (config.json, model.safetensors, the run's tokenizer, a README model card).

Which architecture. posbench's block (posbench/model/transformer.py) is nanoGPT's pre-LN GPT: LayerNorm
with weight and bias (eps 1e-5), attention and MLP linears without bias, an exact-GELU MLP of
``mlp_ratio x d_model``, a final LayerNorm, the output layer tied to the embedding, softmax scale
1/sqrt(head_dim). Llama cannot hold it (RMSNorm without bias, a SwiGLU MLP): exported as Llama it would
be another model. transformers' ``GPTNeoXForCausalLM`` holds it exactly with
``use_parallel_residual=False`` (x + attn(ln1(x)), then x + mlp(ln2(x))), ``hidden_act="gelu"`` (exact
GELU), ``attention_bias=False``, its MLP biases (always present in GPT-NeoX) set to zero, and
``tie_word_embeddings=True``. Its rotary layout is posbench's: channel i paired with i + d/2
("rotate half", posbench/encodings/rope.py), frequencies base^(-2i/d) with posbench's base as
``rope_theta``, so q and k are copied as they are. Only the fused q/k/v projection is reordered:
posbench's rows are (q | k | v) x heads x head_dim, GPT-NeoX's heads x (q | k | v) x head_dim.

NoPE: GPT-NeoX with ``partial_rotary_factor=0`` rotates no channel (its rotary_ndims is 0), which is
NoPE's attention exactly; transformers-native, no custom code. Any other encoding is refused in one
line naming the two that export; so are runs with a recurrent mixer, Canon layers or an extension
method (a RoPE scaling trained in: its rows are not the checkpoint's plain one).

The tokenizer: bytes as a byte-level tokenizer.json whose ids are the byte values (what posbench
trains on), or the run's BPE (data.tokenizer) as it is. Parity with posbench's own forward is tested
(tests/hf/test_export.py): per-token log-probabilities agree in float64 at 1x and 16x, plain and under
linear, dynamic NTK and YaRN (transformers' through rope_parameters, posbench's through its variant).
"""

from __future__ import annotations

import json
import logging
import subprocess
from pathlib import Path

import torch

from posbench import __version__
from posbench.core.errors import PosbenchError
from posbench.core.files import building_dir, make_dirs
from posbench.data.corpus import DataConfig
from posbench.data.load import load_corpus
from posbench.hf import require_transformers
from posbench.spec import RunSpec
from posbench.store.rundir import RunDir

log = logging.getLogger("posbench")

EXPORTABLE = ("rope", "nope")


def check_exportable(spec: RunSpec) -> None:
    name = spec.encoding.name
    if name not in EXPORTABLE:
        raise PosbenchError(f"encoding {name!r} has no transformers class that computes it exactly; exportable: "
                            f"{', '.join(EXPORTABLE)}")
    m = spec.model
    if any(x != "attention" for x in m.layer_mixers()):
        raise PosbenchError(f"model.mixers={list(m.mixers)}: recurrent mixers have no GPT-NeoX counterpart; "
                            "export runs of attention layers only")
    if m.canon:
        raise PosbenchError(f"model.canon={m.canon!r}: Canon layers have no GPT-NeoX counterpart; export runs without them")
    if spec.extend.length is not None and spec.extend.method != "none":
        raise PosbenchError(f"an extension run trained with extend.method={spec.extend.method} is not exported "
                            "(its forward is not the plain checkpoint's); export its parent or a method-none run")


def neox_config(spec: RunSpec):
    transformers = require_transformers()
    m = spec.model
    rotary = spec.encoding.name == "rope"
    return transformers.GPTNeoXConfig(
        vocab_size=m.vocab, hidden_size=m.d_model, num_hidden_layers=m.n_layers, num_attention_heads=m.n_heads,
        intermediate_size=m.mlp_ratio * m.d_model, hidden_act="gelu", max_position_embeddings=spec.train_len,
        layer_norm_eps=1e-5, use_parallel_residual=False, attention_bias=False, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": float(spec.encoding.params.base) if rotary
                         else 10000.0, "partial_rotary_factor": 1.0 if rotary else 0.0},
        bos_token_id=None, eos_token_id=None, attention_dropout=0.0, hidden_dropout=0.0)


def neox_state(state: dict, spec: RunSpec) -> dict:
    """posbench's state dict as GPT-NeoX's (names, the fused q/k/v rows reordered, zero MLP biases)."""
    m = spec.model
    D, H = m.d_model, m.n_heads
    out = {"gpt_neox.embed_in.weight": state["tok_emb.weight"], "lm_head.weight": state["tok_emb.weight"],
           "gpt_neox.final_layer_norm.weight": state["ln_f.weight"], "gpt_neox.final_layer_norm.bias": state["ln_f.bias"]}
    for i in range(m.n_layers):
        p, q = f"blocks.{i}.", f"gpt_neox.layers.{i}."
        qkv = state[p + "attn.qkv.weight"]  # [3D, D], rows (3, H, Dh) -> (H, 3, Dh)
        out[q + "attention.query_key_value.weight"] = qkv.view(3, H, D // H, D).transpose(0, 1).reshape(3 * D, D)
        out[q + "attention.dense.weight"] = state[p + "attn.proj.weight"]
        for ln, name in (("ln1", "input_layernorm"), ("ln2", "post_attention_layernorm")):
            out[q + name + ".weight"], out[q + name + ".bias"] = state[p + ln + ".weight"], state[p + ln + ".bias"]
        fc, proj = state[p + "mlp.fc.weight"], state[p + "mlp.proj.weight"]
        out[q + "mlp.dense_h_to_4h.weight"], out[q + "mlp.dense_h_to_4h.bias"] = fc, torch.zeros(fc.shape[0], dtype=fc.dtype)
        out[q + "mlp.dense_4h_to_h.weight"], out[q + "mlp.dense_4h_to_h.bias"] = proj, torch.zeros(proj.shape[0], dtype=proj.dtype)
    return out


def byte_tokenizer():
    """A tokenizer.json whose ids are the bytes' values: HF tokenizers' byte-level alphabet as a BPE
    vocabulary without merges, no regex split (a byte never merges with the next: posbench's bytes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel

    alphabet = _bytes_to_unicode()
    tok = Tokenizer(models.BPE(vocab={alphabet[b]: b for b in range(256)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    assert len(ByteLevel.alphabet()) == 256
    return tok


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map of the 256 bytes to printable characters (the ByteLevel pre-tokenizer's)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def run_tokenizer(data: DataConfig):
    """The run's tokenizer as a transformers fast tokenizer: bytes, or its BPE/file/hub tokenizer.json."""
    require_transformers()
    from transformers import PreTrainedTokenizerFast

    if data.tokenizer.is_bytes:
        tok = byte_tokenizer()
    else:
        tok = load_corpus(data).tokenizer  # the cached tokenizer of the run's corpus (trained once)
    return PreTrainedTokenizerFast(tokenizer_object=tok)


def posbench_commit() -> str:
    try:
        proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True,
                              timeout=10)
        return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def model_card(run_id: str, spec: RunSpec) -> str:
    enc = spec.encoding.name
    return f"""---
library_name: transformers
tags: [posbench, {enc}]
---
# posbench run {run_id}

A toy decoder-only language model trained by posbench {__version__} (commit `{posbench_commit()}`), run
`{run_id}`: encoding `{enc}`, model `{spec.model.name}` (d_model {spec.model.d_model}, {spec.model.n_layers} layers,
{spec.model.n_heads} heads), train_len {spec.train_len}, seed {spec.seed}, corpus `{spec.data.name}`, tokenizer
`{spec.data.tokenizer.label}`.

Exported by `posbench-export` as `GPTNeoXForCausalLM`: posbench's pre-LN block (LayerNorm with bias, exact-GELU
MLP without bias (zero biases here), tied embeddings) is GPT-NeoX with `use_parallel_residual=False`;
{"RoPE in the rotate-half layout, `rope_theta` = posbench's base" if enc == "rope" else
 "NoPE as `partial_rotary_factor=0` (no channel rotates)"}. posbench's per-token log-probabilities and this
checkpoint's agree to 1e-5 in float64 (tests/hf/test_export.py).

    posbench-eval-hf THIS_FOLDER --context-length {spec.train_len} --bos no
"""


def export(run_dir: str | Path, out_dir: str | Path) -> Path:
    """Write the run's export into ``out_dir`` (built in a temporary folder, then renamed: a refusal or a
    crash leaves nothing); an existing ``out_dir`` is refused."""
    require_transformers()
    from transformers import GPTNeoXForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # one line says what was written
    folder, out = RunDir(Path(run_dir).expanduser()), Path(out_dir).expanduser()
    if out.exists():
        raise PosbenchError(f"{str(out)!r} exists; give a new folder for the export")
    ckpt = folder.load_checkpoint()
    try:
        spec = RunSpec.from_config(ckpt["config"])
    except (ValueError, PosbenchError) as e:
        raise PosbenchError(f"{folder}: the checkpoint's config is not a usable posbench run config ({e})") from None
    check_exportable(spec)
    config = neox_config(spec)
    model = GPTNeoXForCausalLM(config)
    missing, unexpected = model.load_state_dict(neox_state(ckpt["model"], spec), strict=False)
    if unexpected or [k for k in missing if not k.endswith("inv_freq")]:
        raise PosbenchError(f"{folder}: the checkpoint's weights do not map onto GPT-NeoX (missing {missing[:3]}, "
                            f"unexpected {unexpected[:3]})")
    tokenizer = run_tokenizer(spec.data)
    run_id = folder.recorded_run_id()
    make_dirs(out.parent)
    with building_dir(out.parent, f".{out.name}.") as tmp:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "README.md").write_text(model_card(run_id, spec))
        (tmp / "posbench_run.json").write_text(json.dumps({"run_id": run_id, "encoding": spec.encoding.name,
                                                           "train_len": spec.train_len, "commit": posbench_commit(),
                                                           "posbench_version": __version__}, indent=1))
        tmp.rename(out)  # building_dir's cleanup finds nothing left to remove
    log.info("exported %s (%s) to %s as GPTNeoXForCausalLM", run_id, spec.encoding.name, out)
    return out
