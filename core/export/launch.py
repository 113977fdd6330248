"""A plan as launch lines: torchrun and ``accelerate launch`` for its GPUs and nodes.

The lines export ``HEADROOM_PLAN`` first, so every rank's recorder writes the
plan's stamp into the run's log. Several nodes run the same lines with their
own ``NODE_RANK``; ``MASTER_ADDR`` is node 0's address.
"""

from __future__ import annotations

from core.export import accelerate, torchtune
from core.export._common import comment
from core.export.target import Export, Target
from core.plan_stamp import ENV

FILENAME = "launch.sh"
PORT = 29500
SCRIPT = "train.py"


def render(target: Target) -> Export:
    lines = ["#!/bin/sh", comment(target.header()).rstrip("\n"), f"export {ENV}={target.stamp}"]
    lines += ["", "# torchrun"] + [torchrun(target)]
    lines += ["", f"# accelerate, with the accelerate export saved as {accelerate.FILENAME}",
              accelerate_launch(target)]
    if target.setup.framework == "torchtune":
        line = torchtune.tune_run(target, torchtune.recipe_of(target.setup),
                                  torchtune.base_config(target) or torchtune.FILENAME,
                                  torchtune.config(target))
        lines += ["", "# torchtune", line]
    return Export("launch", "\n".join(lines) + "\n", FILENAME, target.plan_hash,
                  _notes(target))


def torchrun(target: Target) -> str:
    lay = target.lay
    per_node = min(lay.n_gpus, lay.gpus_per_node)
    if lay.nodes == 1:
        return f"torchrun --standalone --nproc-per-node={per_node} {SCRIPT}"
    return (f"torchrun --nnodes={lay.nodes} --nproc-per-node={per_node} --node-rank=$NODE_RANK "
            f"--master-addr=$MASTER_ADDR --master-port={PORT} {SCRIPT}")


def accelerate_launch(target: Target) -> str:
    lay = target.lay
    line = (f"accelerate launch --config_file {accelerate.FILENAME} "
            f"--num_processes {lay.n_gpus} --num_machines {lay.nodes}")
    if lay.nodes > 1:
        line += (f" --machine_rank $NODE_RANK --main_process_ip $MASTER_ADDR "
                 f"--main_process_port {PORT}")
    return f"{line} {SCRIPT}"


def _notes(target: Target) -> tuple[str, ...]:
    lay = target.lay
    if lay.nodes == 1:
        return ()
    return (f"run the lines on each of the {lay.nodes} nodes with NODE_RANK=0..{lay.nodes - 1} "
            "and MASTER_ADDR set to node 0",)
