"""``headroom plan``: a whole project sized stage by stage, its variants side by side.

A project is a TOML file (``resources/projects/`` has two) or one stored in
the database (``--save``). Stored projects link runs to their stages: a
pilot's recorded memory and throughput re-size its stage, and the runs'
states give each stage's status. Bad input is one line naming the stage and
the field; a stage no pool card holds is one such line on stderr while the
other stages are still planned (exit status 1).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tracker.cli import command_parser
from tracker.cli._output import fail, print_json


def add_parser(sub, parents) -> None:
    p = command_parser(sub, "plan", parents,
                       description="Size every stage of a project on its hardware pool: layout, "
                                   "memory per GPU, time, GPU-hours and cost, variants side by "
                                   "side, a pilot per stage and when each card is needed.")
    p.add_argument("project", nargs="?", metavar="PROJECT",
                   help="a project TOML file, or the name or id of a stored project")
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.add_argument("--variant", metavar="NAME", help="only this variant")
    p.add_argument("--pilots", action="store_true",
                   help="show each stage's proposed pilot and the checks it must pass")
    p.add_argument("--save", action="store_true",
                   help="store the project file in the database (updates it by name)")
    p.add_argument("--link-pilot", nargs=2, metavar=("STAGE", "RUN"),
                   help="link a stored run to a stage as its pilot (STAGE: name or VARIANT/NAME)")
    p.add_argument("--link-run", nargs=2, metavar=("STAGE", "RUN"),
                   help="link a stored run to a stage as the stage's own run")
    p.add_argument("--card", metavar="GPU",
                   help="with --link-*: the card the run ran on, when its log does not say")
    p.add_argument("--unlink", nargs=2, metavar=("STAGE", "RUN"), help="remove a link")
    p.add_argument("--list", action="store_true", help="list the stored projects")
    p.add_argument("--no-history", action="store_true",
                   help="ignore the database: analytical memory, default MFU, no links")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from core.project import ProjectError
    from tracker.cli import _project

    if args.list:
        return _project.list_projects(args)
    if not args.project:
        fail("give a project file or a stored project's name (headroom plan --list)", code=2)
    try:
        planned = _project.plan(args)
    except ProjectError as err:
        fail(str(err), code=2)
    except LookupError as err:  # a run to link that is not stored
        fail(str(err).strip("'\""), code=2)
    report = _project.report(planned, args.variant)
    if args.json:
        print_json(report)
    else:
        _project.print_report(report, args.pilots)
    where = Path(args.project).name if is_file(args.project) else report["project"]
    for note in planned.notes:
        _project.warn(f"{where}: {note}")
    for error in report["errors"]:
        _project.warn(f"{where}: {error}", error=True)
    return 1 if report["errors"] else 0


def is_file(ref: str) -> bool:
    return ref.endswith(".toml") or Path(ref).is_file()
