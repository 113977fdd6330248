"""Pure computation for Headroom: metric names, run logs, the memory model.

Imports neither Qt nor the database, and nothing heavy at import time.
"""

__version__ = "0.1.0"
