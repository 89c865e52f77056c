#!/usr/bin/env bash
# Behaviour unchanged across a refactoring: build the trainer and simgen of
# revision REV (default: main's first parent) beside this working tree's,
# train the same short CosmoFlow run on two ranks with each, and compare the
# parameter checksum after every epoch. Exit 1 if any differs.
#
#   deploy/dev/same-result.sh [REV]
#
# Builds REV in a git worktree under ${TMPDIR:-/tmp} with its own target
# directory (a first build takes many minutes on two cores).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
rev=${1:-HEAD~1}
work=${TMPDIR:-/tmp}/stagehand-same-result
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

(cd "$here" && cargo build --release -q -p stagehand-trainer --bin trainer -p stagehand-simgen --bin simgen)
rm -rf "$work/data" "$work/reports"
mkdir -p "$work/reports"
if [ ! -d "$work/old" ]; then git -C "$here" worktree add -f "$work/old" "$rev" >/dev/null; fi
git -C "$work/old" checkout -q --detach "$rev"
(cd "$work/old" && cargo build --release -q -p stagehand-trainer --bin trainer)

"$here/target/release/simgen" cosmo --out "$work/data" --boxes 24 --grid 32 --particles 32 --box-size 256 \
    --split 1 --samples-per-file 4 --seed 7 >/dev/null
for side in old new; do
    bin=$here/target/release/trainer
    [ "$side" = old ] && bin=$work/old/target/release/trainer
    mpirun --oversubscribe --bind-to none -np 2 "$bin" train --model cosmoflow --config mlperf-small \
        --data "$work/data" --epochs 2 --batch 2 --workers 1 --seed 3 --optimizer adam --lr 0.001 \
        --report "$work/reports/$side.json" >"$work/reports/$side.log" 2>&1
done
python3 - "$work/reports" "$rev" <<'PY'
import json, sys
reports, rev = sys.argv[1], sys.argv[2]
old, new = ([(e["epoch"], e["checksum"]) for e in json.load(open(f"{reports}/{s}.json"))["epochs"]] for s in ("old", "new"))
for (epoch, a), (_, b) in zip(old, new):
    print(f"epoch {epoch}: {rev} {a}  this tree {b}  {'same' if a == b else 'DIFFERENT'}")
sys.exit(0 if old == new else 1)
PY
