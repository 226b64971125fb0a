"""posbench: which positional encoding keeps working past the training length?"""

__version__ = "0.1.0"
