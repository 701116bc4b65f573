#!/bin/bash
# The extension's first start: its private environment built as environment.ts builds it (a venv,
# then the bundled wheel with the bundled constraints), with pip and with uv, on empty caches from
# PyPI (local pip configuration and wheel dirs switched off). usage: make wheel; bash tests/bench/bench_first_start.sh [runs]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WHEEL=$(ls "$ROOT"/dist/topicforest-*.whl) CONSTRAINTS=$ROOT/server/constraints.txt
UV=$(sed -n "s/^export const UV = '\(.*\)';/\1/p" "$ROOT/clients/vscode/src/environment.ts")
TMP=$(mktemp -d) && trap 'rm -rf "$TMP"' EXIT
export PIP_CONFIG_FILE=/dev/null PIP_CACHE_DIR=$TMP/cache UV_CACHE_DIR=$TMP/cache
unset PIP_FIND_LINKS PIP_INDEX_URL PIP_EXTRA_INDEX_URL
QUIET=(--disable-pip-version-check --no-input --progress-bar off)
fresh() { rm -rf "$TMP/env" "$TMP/cache" && mkdir "$TMP/cache" && python3 -m venv "$TMP/env"; }
seconds() { echo "$(date +%s.%N) - $1" | bc; }
for run in $(seq "${1:-1}"); do
  t=$(date +%s.%N); fresh
  "$TMP/env/bin/python" -m pip install "${QUIET[@]}" -c "$CONSTRAINTS" "$WHEEL" >"$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
  echo "run $run pip: $(seconds "$t") s"
  t=$(date +%s.%N); fresh
  "$TMP/env/bin/python" -m pip install "${QUIET[@]}" "$UV" >"$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
  fetched=$(seconds "$t")
  "$TMP/env/bin/python" -m uv pip install --python "$TMP/env/bin/python" -c "$CONSTRAINTS" "$WHEEL" >"$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
  echo "run $run uv: $(seconds "$t") s (of which venv + installing $UV: $fetched s)"
done
