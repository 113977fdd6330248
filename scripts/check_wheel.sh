#!/usr/bin/env bash
# Build Headroom's wheel and prove it works installed outside the checkout.
#
# A fresh virtual environment in a temporary folder gets the wheel (torch held to the
# local CPU build by constraints.txt, never a CUDA one); then, from that folder, with
# nothing of the source tree reachable, it runs what a new user would: the version, a
# sizing from the shipped presets and GPU catalog, an ingest of a shipped sample run
# into a temporary database, and the window's smoke test. CI runs it (.ci/run).
#   scripts/check_wheel.sh            # PYTHON=python3.11 by default, as ./dev
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PYTHON=${PYTHON:-python3.11}
work=$(mktemp -d "${TMPDIR:-/tmp}/headroom-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT
quiet() { "$@" 2>&1 | { grep -v "^WARNING: Location '.*' is ignored" || true; }; }

echo "== building the wheel (from a copy of the checkout's files: no stale build/ folder)"
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard \
  | tar --null -T - -cf - | tar -C "$work/src" -xf -
quiet "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$work/dist" "$work/src"
wheel=$(ls "$work"/dist/headroom-*.whl)
"$PYTHON" - "$wheel" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
data = [n for n in names if n.startswith("headroom_resources/")]
print(f"{sys.argv[1].rsplit('/', 1)[-1]}: {len(names)} files, {len(data)} of them data")
EOF

echo "== installing it into a fresh virtual environment"
"$PYTHON" -m venv "$work/venv"
quiet "$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  -c "$root/constraints.txt" "$wheel"

"$work/venv/bin/python" -c "from importlib.metadata import version; print('torch', version('torch'))"

cd "$work"
unset PYTHONPATH HEADROOM_RESOURCES HEADROOM_DB
export HEADROOM_HOME="$work/home" QT_QPA_PLATFORM=offscreen
bin="$work/venv/bin"

echo "== headroom --version"
"$bin/headroom" --version

echo "== headroom size --model llama-3.1-8b --method lora --gpu rtx-4090 --json"
"$bin/headroom" size --model llama-3.1-8b --method lora --gpu rtx-4090 --json > size.json
"$bin/python" - size.json <<'EOF'
import json, sys
report = json.load(open(sys.argv[1]))
fit = next(f for f in report["fits"] if f["gpu"] == "RTX 4090")
assert report["model"]["name"] == "llama-3.1-8b" and report["plans"], report
print(f"{report['model']['name']}: {report['device_gib']:.1f} GiB per GPU, "
      f"RTX 4090 fits: {fit['fits']}, {len(report['plans'])} plans")
EOF

echo "== headroom ingest (a shipped sample run, into a temporary database)"
data=$("$bin/python" -c "from core.resources import resources_dir; print(resources_dir())")
case "$data" in
  "$work"/venv/*) echo "data found in the installed package: ${data#"$work"/}" ;;
  *) echo "error: data found outside the installed package: $data" >&2; exit 1 ;;
esac
"$bin/headroom" ingest "$data/samples/synthetic-llama3-8b-qlora-rtx4090.jsonl" --db "$work/check.db"
"$bin/headroom" runs --db "$work/check.db"

echo "== headroom gui --smoke"
"$bin/headroom" gui --smoke
echo "== the installed wheel works"
