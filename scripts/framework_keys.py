"""Write the config keys torchtune and axolotl accept, for tests that check the exports.

Neither installs beside Headroom's pinned dependencies (axolotl pins its own
transformers, pydantic and numpy; torchtune needs torchao), so the tests read
these lists, taken from the released packages:

    pip download --no-deps torchtune==0.6.1 axolotl==0.19.0 -d wheels
    unzip -q wheels/torchtune-*.whl -d wheels/torchtune; unzip -q wheels/axolotl-*.whl -d wheels/axolotl
    python scripts/framework_keys.py wheels/torchtune wheels/axolotl

torchtune: every shipped config of the fine-tuning recipes (its nested keys, and the recipe
its own comment runs it with) and the keys each recipe reads (``cfg.x``,
``cfg.get("x")``). axolotl: the fields of its input schema (with the Liger
plugin's), of its FSDP config, and the attention implementations it names, read from
the pydantic classes themselves.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "framework_keys"
RECIPE_KEYS = re.compile(r"""cfg(?:\.get\(\s*["']([a-z_]+)["']|\.([a-z_]+)\b|\[["']([a-z_]+)["']\])""")
FINE_TUNING = ("full_finetune_single_device", "full_finetune_distributed",
               "lora_finetune_single_device", "lora_finetune_distributed")
RUN_LINE = re.compile(r"tune run (?:--\S+ \S+ )*(\w+) --config (\S+)")
# The Liger plugin's package imports its runtime; its args module alone needs pydantic.
AXOLOTL_FIELDS = """
import importlib.util, json, sys
from axolotl.utils.schemas.config import AxolotlInputConfig
from axolotl.utils.schemas.enums import CANONICAL_ATTN_IMPLS
spec = importlib.util.spec_from_file_location("liger_args", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
LigerArgs = module.LigerArgs
from axolotl.utils.schemas.fsdp import FSDPConfig
print(json.dumps({"top": sorted(set(AxolotlInputConfig.model_fields) | set(LigerArgs.model_fields)),
                  "fsdp_config": sorted(FSDPConfig.model_fields),
                  "attn_implementation": sorted(CANONICAL_ATTN_IMPLS)}))
"""


def torchtune(root: Path) -> dict:
    recipes = {}
    for path in sorted((root / "recipes").glob("*.py")):
        found = {next(g for g in m.groups() if g) for m in RECIPE_KEYS.finditer(path.read_text())}
        recipes[path.stem] = sorted(found - {"get"})
    configs = {}
    for path in sorted((root / "recipes" / "configs").rglob("*.yaml")):
        run = RUN_LINE.search(path.read_text())
        if run is None or run.group(1) not in FINE_TUNING:
            continue
        name = path.relative_to(root / "recipes" / "configs").with_suffix("").as_posix()
        data = yaml.safe_load(path.read_text()) or {}
        configs[name] = {"recipe": run.group(1), "keys": sorted(_dotted(data))}
    recipes = {name: keys for name, keys in recipes.items() if name in FINE_TUNING}
    version = (root / "torchtune" / "__init__.py").read_text().split("'")[1].split("+")[0]
    return {"package": "torchtune", "version": version, "recipes": recipes, "configs": configs}


def axolotl(root: Path) -> dict:
    args = root / "axolotl" / "integrations" / "liger" / "args.py"
    found = subprocess.run([sys.executable, "-c", AXOLOTL_FIELDS, str(args)], check=True, text=True,
                           capture_output=True, env={**os.environ, "PYTHONPATH": str(root)}).stdout
    version = next(root.glob("axolotl-*.dist-info")).name.split("-")[1].removesuffix(".dist")
    return {"package": "axolotl", "version": version, **json.loads(found)}


def _dotted(data: dict, prefix: str = ""):
    for key, value in data.items():
        yield f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _dotted(value, f"{prefix}{key}.")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for make, root in ((torchtune, Path(sys.argv[1])), (axolotl, Path(sys.argv[2]))):
        data = make(root)
        path = OUT / f"{data['package']}-{data['version']}.json"
        path.write_text(json.dumps(data, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
