"""The report's shared drawing, below every topic: the document's blocks and their two renderings
(document.py, page.py), each row's colour, marker and order (style.py), matplotlib's settings
(mplconfig.py), the figure grids (figure_layout.py) and the plot helpers every topic's figure shares
(plot.py). It imports no section or topic module."""
