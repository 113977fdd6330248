"""Readers for console logs: one module per dialect, each a table of compiled regexes.

The shared machinery lives in the private modules: ``_lines`` (streaming,
cleaned lines), ``_values`` (numbers, sizes, durations as logs print them),
``_runs`` (points into runs, restarts and resumes) and ``_engine`` (rules,
sniffing, the pass over a file). Crash evidence is found by
:mod:`tracker.readers.crash`, which readers of other formats can use too.
"""
