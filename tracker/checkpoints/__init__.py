"""The checkpoint manager: find a run's checkpoints, inspect them safely, answer which to keep.

:mod:`manager` is the face the app and the command line call (``scan``,
``rescan``, ``report``, ``plan_retention``, ``delete``); the policy itself is
pure and lives in :mod:`core.checkpoints`, :mod:`core.resume` and
:mod:`core.retention`.
"""
