"""Context extension by fine-tuning (extension runs, posbench/training/extend.py): each method's perplexity
at the target length against fine-tuning steps, beside the encoding trained from scratch at that length
and the control continued at train_len.

frames.py  the extension rows, the from-scratch references, the table (steps to within the tolerance,
           the gain net of the control, paired by seed) and the curves the figure draws
figure.py  perplexity at the target length against fine-tuning steps
section.py the extension section
"""
