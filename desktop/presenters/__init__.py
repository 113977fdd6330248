"""Qt-free decisions about what the views show: columns, curves, differences, reports.

Everything here is plain Python over tracker and core types, so it is tested
without a display; the views only render what these functions return.
"""
