"""PoSE's skip-wise position ids (Zhu et al. 2024, "PoSE: Efficient Context Window Extension of LLMs via
Positional Skip-wise Training"; dwzhu-pku/PoSE ``src/train_pose.py``, ``train_preprocess_function_pose``).

An extension run with ``extend.method=pose`` (linear frequencies, the paper's main setting) or
``pose_yarn`` fine-tunes on windows of the training length L whose position ids reach the target T:
the window is cut in two chunks, the first of r1 ~ U{1, ..., ceil(L / 2)} tokens at positions
0..r1-1, the second at positions shifted by u ~ U{0, ..., T - L}:

    positions = [0, 1, ..., r1 - 1, r1 + u, ..., L - 1 + u]

(the reference's current revision: the first chunk always starts at 0, "more uniform coverage of
large relative positions"). Deviations, for toy size: one draw per step shared by the batch (the
model takes one position tensor per forward, as ``train.random_positions`` does; the reference draws
per example), from (seed, step) so that a resumed run is bit-identical; and the text is one
contiguous window, where the reference takes the second chunk from further into a document of up
to 5 L tokens (so the only change from the "continued training" control is the positions).
"""

from __future__ import annotations
