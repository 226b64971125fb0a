"""A local Hugging Face checkpoint, loaded for scoring: its config, model, tokenizer and what posbench
needs to know of it (its context length, how it encodes positions, its BOS token).

Everything is read from the folder (``local_files_only=True``: the hub is never asked). A folder
that is not a checkpoint, has no tokenizer, holds an architecture AutoModelForCausalLM does not
know, asks for remote code without ``--trust-remote-code``, or a dtype the device cannot run is
refused in one line (PosbenchError), before any text is scored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import torch

from posbench.core.device import resolve_device
from posbench.core.errors import PosbenchError
from posbench.hf import require_transformers

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16, "float64": torch.float64}
BOS_POLICIES = ("auto", "yes", "no")  # auto: what the tokenizer adds to a text (add_special_tokens=True)
WEIGHTS = ("*.safetensors", "pytorch_model*.bin")
# the families the tests build from configs (tests/hf/); any other AutoModelForCausalLM type loads too
TESTED = ("llama", "mistral", "qwen2", "qwen3", "gpt_neox", "gpt2")
# learned absolute position tables: (module name suffix, config key of its size); a window past it is not defined
LEARNED_TABLES = (("wpe", "n_positions"), ("embed_positions", "max_position_embeddings"))


@dataclass(frozen=True)
class LoadedCheckpoint:
    """A checkpoint ready to score: the model (eval mode, on its device, in its dtype), its fast
    tokenizer (transformers'), and facts about it."""

    path: Path
    model: object
    tokenizer: object
    model_type: str
    context_length: int  # the checkpoint's "train_len"
    bos_id: int | None  # the token each window starts with (BOS policy), None: windows start with text
    learned_positions: int | None  # size of a learned position table, None: none (rotary, ALiBi, ...)
    rotary: bool  # has RoPE parameters that transformers' scalings apply to
    identity: str  # a hash of the config and the weight files' names and sizes
    dtype: str
    device: torch.device

    @property
    def name(self) -> str:
        return self.path.name


def _read_config(path: Path) -> dict:
    if not path.is_dir():
        raise PosbenchError(f"{str(path)!r} is not a folder; give the local folder of a Hugging Face checkpoint "
                            "(config.json, weights, tokenizer)")
    try:
        return json.loads((path / "config.json").read_text())
    except FileNotFoundError:
        raise PosbenchError(f"{str(path)!r} is not a Hugging Face checkpoint (no config.json); give the folder "
                            "save_pretrained wrote") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise PosbenchError(f"{str(path / 'config.json')!r} is not JSON ({e})") from None


def check_architecture(raw: dict, trust_remote_code: bool) -> str:
    """The config's model type, when AutoModelForCausalLM can build it (remote code only with the flag)."""
    transformers = require_transformers()
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    model_type = raw.get("model_type")
    remote = "AutoModelForCausalLM" in (raw.get("auto_map") or {})
    if remote and not trust_remote_code:
        raise PosbenchError(f"the checkpoint's config.json asks for its own code (auto_map: "
                            f"{raw['auto_map']['AutoModelForCausalLM']}); read it, then pass --trust-remote-code to run it")
    if not remote and model_type not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise PosbenchError(f"model_type {model_type!r} is not a causal LM of transformers {transformers.__version__}; "
                            f"supported: any model type of AutoModelForCausalLM (tested: {', '.join(TESTED)})")
    return str(model_type)


def check_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """The torch dtype, when the device runs a matrix product and a softmax in it."""
    if dtype not in DTYPES:
        raise PosbenchError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
    if device.type == "cuda" and dtype == "bfloat16" and not torch.cuda.is_bf16_supported():
        raise PosbenchError(f"dtype bfloat16 cannot run on {torch.cuda.get_device_name(device)}; use float16 or float32")
    try:
        x = torch.ones(2, 2, dtype=DTYPES[dtype], device=device)
        (x @ x).softmax(-1)
    except (RuntimeError, TypeError) as e:
        raise PosbenchError(f"dtype {dtype} cannot run on {device} ({str(e).splitlines()[0][:100]}); "
                            "use float32") from None
    return DTYPES[dtype]


def load_tokenizer(path: Path, trust_remote_code: bool = False):
    """The checkpoint's fast tokenizer (the one posbench tokenizes the corpus with: its backend)."""
    require_transformers()
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True, trust_remote_code=trust_remote_code)
    except Exception as e:  # noqa: BLE001 - no tokenizer files, or files transformers cannot read
        raise PosbenchError(f"no tokenizer in {str(path)!r} that transformers can load ({str(e).splitlines()[0][:120]}); "
                            "save one beside the model (tokenizer.save_pretrained)") from None
    if getattr(tok, "backend_tokenizer", None) is None:
        raise PosbenchError(f"the tokenizer in {str(path)!r} has no fast (tokenizers) form; posbench tokenizes "
                            "with a tokenizer.json: save the checkpoint's tokenizer as a fast tokenizer")
    return tok


def bos_token(tok, policy: str) -> int | None:
    """The token each window starts with: ``yes`` the tokenizer's BOS (refused without one), ``no`` none,
    ``auto`` the BOS when the tokenizer puts one before a text (add_special_tokens=True), else none."""
    if policy not in BOS_POLICIES:
        raise PosbenchError(f"unknown BOS policy {policy!r}; valid: {', '.join(BOS_POLICIES)}")
    bos = tok.bos_token_id
    if policy == "no":
        return None
    if policy == "yes":
        if bos is None:
            raise PosbenchError("--bos yes: the tokenizer has no BOS token; use --bos no (or auto)")
        return int(bos)
    ids = tok("a", add_special_tokens=True)["input_ids"]
    return int(bos) if bos is not None and ids and ids[0] == bos else None


def weight_files(path: Path) -> list[Path]:
    return sorted(p for pattern in WEIGHTS for p in path.glob(pattern))


def identity(path: Path, raw: dict) -> str:
    """A hash of what the checkpoint is: its config and its weight files' names and sizes."""
    files = [(p.name, p.stat().st_size) for p in weight_files(path)]
    return hashlib.sha1(json.dumps([raw, files], sort_keys=True, default=str).encode()).hexdigest()[:10]


def context_length_of(config, given: int | None) -> int:
    """``given``, or the config's max_position_embeddings (n_positions for GPT-2)."""
    if given is not None:
        if given < 1:
            raise PosbenchError(f"--context-length must be a positive integer, got {given}")
        return int(given)
    for key in ("max_position_embeddings", "n_positions", "seq_length"):
        if isinstance(getattr(config, key, None), int):
            return int(getattr(config, key))
    raise PosbenchError("the checkpoint's config names no context length (max_position_embeddings); "
                        "give --context-length")


def learned_table(model, config) -> int | None:
    """The size of a learned absolute position table (GPT-2's wpe, OPT's embed_positions), None without one."""
    for name, module in model.named_modules():
        for suffix, key in LEARNED_TABLES:
            if name.endswith(suffix) and isinstance(module, torch.nn.Embedding):
                return int(getattr(config, key, None) or module.num_embeddings)
    return None


@dataclass(frozen=True)
class Inspected:
    """A checkpoint's folder, checked and read (its config and tokenizer), its weights not loaded yet."""

    path: Path
    raw: dict
    config: object
    tokenizer: object
    model_type: str
    context_length: int
    bos_id: int | None
    torch_dtype: torch.dtype
    dtype: str
    device: torch.device
    trust_remote_code: bool

    @property
    def rotary(self) -> bool:
        return bool(getattr(self.config, "rope_parameters", None))


def inspect(path: str | Path, *, dtype: str = "float32", device: str = "auto", bos: str = "auto",
            context_length: int | None = None, trust_remote_code: bool = False) -> Inspected:
    """Every input checked (one line each) and the config and tokenizer read; no weights loaded."""
    require_transformers()
    path = Path(path).expanduser()
    raw = _read_config(path)
    model_type = check_architecture(raw, trust_remote_code)
    if not weight_files(path):
        raise PosbenchError(f"{str(path)!r} holds a config.json but no weights (*.safetensors, pytorch_model*.bin); "
                            "give the folder save_pretrained wrote")
    dev = resolve_device(device)
    torch_dtype = check_dtype(dtype, dev)
    tok = load_tokenizer(path, trust_remote_code)
    bos_id = bos_token(tok, bos)
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(path), local_files_only=True, trust_remote_code=trust_remote_code)
    except Exception as e:  # noqa: BLE001 - a config transformers cannot read
        raise PosbenchError(f"cannot read the config in {str(path)!r} ({type(e).__name__}: "
                            f"{str(e).splitlines()[0][:160]})") from None
    return Inspected(path, raw, config, tok, model_type, context_length_of(config, context_length), bos_id, torch_dtype,
                     dtype, dev, trust_remote_code)


def load(found: Inspected) -> LoadedCheckpoint:
    """The inspected checkpoint's model loaded (eval mode, its device and dtype)."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # posbench's own progress bar says what runs
    try:
        model = AutoModelForCausalLM.from_pretrained(str(found.path), config=found.config, local_files_only=True,
                                                     dtype=found.torch_dtype, trust_remote_code=found.trust_remote_code)
    except Exception as e:  # noqa: BLE001 - weights of another shape, a torn file
        raise PosbenchError(f"cannot load the model in {str(found.path)!r} ({type(e).__name__}: "
                            f"{str(e).splitlines()[0][:160]})") from None
    model = model.to(found.device).eval()
    return LoadedCheckpoint(found.path, model, found.tokenizer, found.model_type, found.context_length, found.bos_id,
                            learned_table(model, found.config), found.rotary, identity(found.path, found.raw),
                            found.dtype, found.device)
