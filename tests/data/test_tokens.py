"""posbench/data/tokens.py: a corpus under a subword tokenizer: each document encoded alone, the
separator's own tokens between documents, so that no token spans two documents."""

from types import SimpleNamespace

from posbench.data.tokens import encode, pieces, tokenizers_name


def small_bpe():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(["hello world, hello there"] * 20, trainer)
    return tok


def test_documents_are_split_at_the_separator_or_else_at_lines():
    assert pieces(b"ab\0cd\0", b"\0") == [b"ab", b"cd", b""]
    assert pieces(b"one\ntwo\nthree", b"") == [b"one\n", b"two\n", b"three"]


def test_each_document_is_encoded_alone_with_the_separator_s_tokens_between():
    tok = small_bpe()
    ids = encode(tok, b"hello world\0hello there", b"\0")
    alone = [tok.encode(t, add_special_tokens=False).ids for t in ("hello world", "\0", "hello there")]
    assert ids.tolist() == alone[0] + alone[1] + alone[2]
    assert tok.decode(ids.tolist()) == "hello world\0hello there"


def test_a_corpus_without_a_tokenizer_is_bytes():
    assert tokenizers_name(SimpleNamespace(fingerprint={"hash": "x"})) == "byte"
    assert tokenizers_name(SimpleNamespace(fingerprint={"tokenizer": {"kind": "bpe"}})) == "bpe"
