"""Tiny random-weight checkpoints of several transformers families (hidden 32, 2 layers), each saved with a
small byte-level BPE tokenizer built here: the hub is never asked."""

from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="transformers is in the hf and test extras")

from tests.conftest import write_text_corpus  # noqa: E402

VOCAB = 300
CONTEXT = 16

FAMILIES = {
    "llama": ("LlamaConfig", {"intermediate_size": 64, "num_key_value_heads": 2, "max_position_embeddings": CONTEXT}),
    "qwen2": ("Qwen2Config", {"intermediate_size": 64, "num_key_value_heads": 2, "max_position_embeddings": CONTEXT}),
    "qwen3": ("Qwen3Config", {"intermediate_size": 64, "num_key_value_heads": 2, "max_position_embeddings": CONTEXT,
                              "head_dim": 8}),
    "mistral": ("MistralConfig", {"intermediate_size": 64, "num_key_value_heads": 2, "max_position_embeddings": CONTEXT,
                                  "sliding_window": None}),
    "gpt_neox": ("GPTNeoXConfig", {"intermediate_size": 64, "max_position_embeddings": CONTEXT}),
    "gpt2": ("GPT2Config", {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 2 * CONTEXT}),
}


def tokenizer(bos: bool):
    """A byte-level BPE of VOCAB tokens learned from a few sentences, with <s> and </s>; with ``bos`` it
    puts <s> before every text (as Llama's does), without it adds nothing (as GPT-2's)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<s>", "</s>"], show_progress=False)
    tok.train_from_iterator(["alpha beta gamma delta posit token window length bias rotate 0. 1. 2."] * 50, trainer)
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>")


def save_tiny(family: str, folder: Path, seed: int = 0, **extra) -> Path:
    """A random-weight ``family`` model (hidden 32, 2 layers, 4 heads) and its tokenizer saved in ``folder``."""
    import torch
    import transformers

    name, settings = FAMILIES[family]
    common = {} if family == "gpt2" else {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4}
    tok = tokenizer(bos=family in ("llama", "mistral"))
    config = getattr(transformers, name)(vocab_size=len(tok), bos_token_id=tok.bos_token_id,
                                         eos_token_id=tok.eos_token_id, **common, **{**settings, **extra})
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def tiny_gpt_oss(layer_types: list[str], sliding_window: int, context: int):
    """A random-weight gpt-oss (hidden 32, 4 heads of 8, 4 experts, plain RoPE) in float32 (its experts' grouped
    GEMM takes no float64), its sink logits set far from 0 so that a path dropping them would show."""
    import torch
    import transformers

    config = transformers.GptOssConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=len(layer_types), num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, intermediate_size=64, num_local_experts=4, num_experts_per_tok=2,
        sliding_window=sliding_window, max_position_embeddings=context, layer_types=layer_types,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    torch.manual_seed(0)
    model = transformers.GptOssForCausalLM(config).eval()
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.sinks.copy_(torch.tensor([2.0, -1.0, 0.5, 1.5]))
    return model


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    return {f: save_tiny(f, root / f"tiny-{f}") for f in FAMILIES}


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory) -> Path:
    return write_text_corpus(tmp_path_factory.mktemp("hf-corpus") / "docs", n_docs=30, words_per_doc=300)
