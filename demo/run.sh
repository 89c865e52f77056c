#!/usr/bin/env bash
# The demo: one pipeline end to end under mpirun on RANKS ranks as
# RANKS / RANKS_PER_NODE pretend nodes (generate, stage, train), then a
# summary a person reads in ten seconds. `make demo [MODEL=...]` builds the
# binaries and calls this; it can also run on its own:
#
#   bash demo/run.sh [cosmoflow|deepcam|etalumis|inverse|hepcnn|cosmogan]
#
# Environment: DEMO_DIR (/tmp/stagehand-demo, recreated), RANKS (4),
# RANKS_PER_NODE (2), BIN (target/release). Every command's full output
# and JSON report stay in DEMO_DIR; the terminal shows one line per step
# and the training's epoch lines.
set -euo pipefail

MODEL=${1:-cosmoflow}
DIR=${DEMO_DIR:-/tmp/stagehand-demo}
RANKS=${RANKS:-4}
RANKS_PER_NODE=${RANKS_PER_NODE:-2}
BIN=${BIN:-target/release}

# Open MPI refuses to run as root unless told. On one machine only the
# shared-memory transport is allowed: if it cannot start, the run fails
# instead of moving every byte through TCP loopback. `pml ob1` spares each
# rank's MPI_Init the probe of Omni-Path drivers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export STAGEHAND_RANKS_PER_NODE=$RANKS_PER_NODE
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca pml ob1
    -np "$RANKS" -x STAGEHAND_RANKS_PER_NODE)
NODES=$((RANKS / RANKS_PER_NODE))

case $MODEL in
cosmoflow | deepcam | etalumis | inverse | hepcnn | cosmogan) ;;
*)
    echo "demo: unknown MODEL '$MODEL' (cosmoflow, deepcam, etalumis, inverse, hepcnn or cosmogan)" >&2
    exit 2
    ;;
esac
for program in simgen stager trainer demo-summary; do
    if [[ ! -x $BIN/$program ]]; then
        echo "demo: $BIN/$program is missing; build first (make demo does)" >&2
        exit 2
    fi
done

rm -rf "$DIR"
mkdir -p "$DIR/logs"
STARTED=$SECONDS
STEP=0

# step TITLE LOG SHOWN COMMAND...: run COMMAND with its output in
# DIR/logs/LOG.log; lines matching the extended regex SHOWN also go to the
# terminal. On failure, the log's last lines and exit 1.
step() {
    local title=$1 log=$DIR/logs/$2.log shown=$3
    shift 3
    STEP=$((STEP + 1))
    echo "== $STEP. $title"
    if ! "$@" > "$log" 2>&1; then
        echo "demo: step $STEP failed: $*" >&2
        tail -n 15 "$log" >&2
        exit 1
    fi
    if [[ -n $shown ]]; then
        grep -E "$shown" "$log" | sed 's/^/   /' || true
    fi
}

# serve_beside SOURCE DEST_TEMPLATE BANDWIDTH TRAIN_ARGS...: `stager serve`
# (one rank per node) and one training run started at the same moment, the
# training waiting for the service to come up; then stop the service.
serve_beside() {
    local source=$1 dest=$2 bandwidth=$3 log=$DIR/logs/serve.log
    shift 3
    STEP=$((STEP + 1))
    echo "== $STEP. stage and train at once: \`stager serve\` through the same $bandwidth source, one epoch beside it"
    STAGEHAND_RANKS_PER_NODE=1 mpirun --oversubscribe --bind-to none --mca btl self,vader --mca pml ob1 \
        -np "$NODES" -x STAGEHAND_RANKS_PER_NODE "$BIN/stager" serve --source "$source" --dest "$dest" \
        --policy per-node=60 --train-ranks-per-node "$RANKS_PER_NODE" --source-bandwidth "$bandwidth" \
        --report "$DIR/served-stage.json" > "$log" 2>&1 &
    local service=$!
    if ! STAGEHAND_SERVICE_WAIT=60 "${MPIRUN[@]}" -x STAGEHAND_SERVICE_WAIT "$BIN/trainer" train "$@" \
        > "$DIR/logs/served-train.log" 2>&1; then
        echo "demo: training beside the service failed" >&2
        tail -n 15 "$DIR/logs/served-train.log" "$log" >&2
        kill "$service" 2> /dev/null || true
        exit 1
    fi
    "$BIN/stager" stop "${dest//\{node\}/0}" >> "$log" 2>&1 || true
    if ! wait "$service"; then
        echo "demo: the staging service failed" >&2
        tail -n 15 "$log" >&2
        exit 1
    fi
}

# The training step prints its epoch lines as they come (a few minutes).
train() {
    local log=$DIR/logs/train.log
    STEP=$((STEP + 1))
    echo "== $STEP. $1"
    shift
    if ! "${MPIRUN[@]}" "$BIN/trainer" train "$@" --report "$DIR/train.json" --plot "$DIR/loss.png" 2>&1 |
        tee "$log" | grep --line-buffered -E '^ *epoch|epoch [0-9]+/' | sed -u 's/^/   /'; then
        echo "demo: training failed" >&2
        tail -n 15 "$log" >&2
        exit 1
    fi
}

case $MODEL in
cosmoflow)
    # 960 small universes from the wide Quijote priors (Villaescusa-Navarro
    # et al. 2020): 800 to train on, 160 held out. Each is a 32³ grid of
    # dark-matter counts at 4 redshifts, from 64³ particles in 256 Mpc/h.
    universes=(--grid 32 --particles 64 --box-size 256 --split 1 --samples-per-file 8 --priors quijote)
    step "simulate 800 training universes (2LPT) into CosmoFlow TFRecords, on $RANKS ranks" simgen "" \
        "${MPIRUN[@]}" "$BIN/simgen" cosmo --out "$DIR/cosmo" --boxes 800 --seed 7 "${universes[@]}" \
        --report "$DIR/simgen.json"
    step "simulate 160 held-out universes" simgen-val "" \
        "${MPIRUN[@]}" "$BIN/simgen" cosmo --out "$DIR/cosmo-val" --boxes 160 --seed 8 "${universes[@]}" \
        --report "$DIR/simgen-val.json"
    step "simulate one 64³ box to look at: slices and its power spectrum" pk-box "" \
        "$BIN/simgen" cosmo --out "$DIR/pk-box" --boxes 1 --grid 64 --particles 64 --box-size 256 --preview
    step "its power spectrum at z = 3 against linear theory" pk "" \
        "$BIN/simgen" pk --input "$DIR/pk-box/cosmo_000000.tfrecord" --channel 3 --redshift 3 --size 128 \
        --compensate ngp --plot "$DIR/pk.png"
    step "stage: 60 of the 100 files onto each of $NODES nodes (per-node), each file read once" stage "" \
        "${MPIRUN[@]}" "$BIN/stager" stage --source "$DIR/cosmo" --dest "$DIR/node{node}" \
        --policy per-node=60 --report "$DIR/stage.json"
    step "verify every node's files against the manifest" verify "" \
        "${MPIRUN[@]}" "$BIN/stager" verify --source "$DIR/cosmo" --dest "$DIR/node{node}" --policy per-node=60
    # The recipe of docs/trainer.md ("What learning looks like here").
    train "train the reduced CosmoFlow on what each node holds; validate on the held-out universes" \
        --config mlperf-small --staged "$DIR/node{node}" \
        --val "$DIR/cosmo-val" --epochs 8 --batch 2 --workers 1 \
        --optimizer adam --lr 0.001 --schedule poly --poly-end 0.05 --dropout 0 --standardize --augment \
        --checkpoint "$DIR/checkpoints"
    # Time to the first batch when the source is slow (a shared file
    # system under load, emulated): staging first, then training, against
    # training beside `stager serve`, which stages in the order training
    # reads. One epoch each, on the same files.
    slow=60MB/s
    epoch=(--config mlperf-small --val-fraction 0 --epochs 1 --batch 2 --workers 1 --seed 1)
    step "stage first, through a source throttled to $slow" stage-first "" \
        "${MPIRUN[@]}" "$BIN/stager" stage --source "$DIR/cosmo" --dest "$DIR/first{node}" \
        --policy per-node=60 --source-bandwidth "$slow" --report "$DIR/first-stage.json"
    step "then train one epoch on it" train-first "" \
        "${MPIRUN[@]}" "$BIN/trainer" train "${epoch[@]}" --staged "$DIR/first{node}" --report "$DIR/first-train.json"
    serve_beside "$DIR/cosmo" "$DIR/served{node}" "$slow" \
        "${epoch[@]}" --staged "$DIR/served{node}" --report "$DIR/served-train.json"
    ;;
deepcam)
    step "simulate 48 climate fields (112 x 208, 16 channels) with cyclone and river masks into DeepCAM HDF5" \
        simgen "" "${MPIRUN[@]}" "$BIN/simgen" climate --out "$DIR/climate" --samples 48 --height 112 \
        --width 208 --preview --report "$DIR/simgen.json"
    step "stage: the whole dataset onto each of $NODES nodes (replicate), each file read once" stage "" \
        "${MPIRUN[@]}" "$BIN/stager" stage --source "$DIR/climate" --dest "$DIR/node{node}" \
        --policy replicate --report "$DIR/stage.json"
    step "verify every node's files against the manifest" verify "" \
        "${MPIRUN[@]}" "$BIN/stager" verify --source "$DIR/climate" --dest "$DIR/node{node}" --policy replicate
    train "train the small Tiramisu to segment cyclones and rivers (weighted cross-entropy)" \
        --model tiramisu --config small --staged "$DIR/node{node}" \
        --val "$DIR/climate" --epochs 8 --batch 2 --workers 1 --optimizer adam --lr 0.003 \
        --checkpoint "$DIR/checkpoints"
    ;;
etalumis)
    step "simulate 4000 tau-decay traces with calorimeter images into trace LMDB stores" simgen "" \
        "${MPIRUN[@]}" "$BIN/simgen" traces --out "$DIR/traces" --traces 4000 --files 4 --seed 1 --noise 0.05 \
        --preview --report "$DIR/simgen.json"
    step "simulate 200 held-out traces" simgen-val "" \
        "${MPIRUN[@]}" "$BIN/simgen" traces --out "$DIR/traces-val" --traces 200 --seed 2 --noise 0.05 \
        --report "$DIR/simgen-val.json"
    # No staging here: the Etalumis model cuts its minibatches from the
    # traces sorted by type over the whole dataset (Baydin et al. 2019), so
    # every rank reads the one shared copy (`--data`).
    train "train the small Etalumis inference network on the traces" \
        --model etalumis --config small --data "$DIR/traces" --val "$DIR/traces-val" --epochs 4 --batch 16 --workers 1 --optimizer adam \
        --lr 0.001 --checkpoint "$DIR/checkpoints"
    ;;
inverse)
    # The generate-then-train job of Laanait et al. 2019: every node
    # simulates its own samples into node-local storage, then trains on them.
    step "simulate 400 CBED stacks (4 x 4 probe positions) into each node's own LMDB" simgen "" \
        "${MPIRUN[@]}" "$BIN/simgen" multislice --out "$DIR/node{node}/cbed" --samples 400 --grid 32 \
        --sampling 0.17A --scan 4x4 --thickness 16A..40A --offset none --preview --report "$DIR/simgen.json"
    train "train the small inverse-imaging FC-DenseNet on what each node generated" \
        --model inverse --config small --node-local "$DIR/node{node}/cbed" --epochs 14 --batch 4 --workers 1 \
        --optimizer adam --lr 0.002 --checkpoint "$DIR/checkpoints"
    ;;
hepcnn)
    # Kurth et al. 2018's latency-bound probe on Bhimji et al. 2017's task:
    # gluino pairs against QCD multi-jet events, as calorimeter images.
    step "simulate 6000 collision events (64 x 64 x 3: ECAL, HCAL, tracks) into HEP-CNN HDF5, on $RANKS ranks" \
        simgen "" "${MPIRUN[@]}" "$BIN/simgen" jets --out "$DIR/jets" --events 6000 --per-file 500 --size 64 \
        --val-fraction 0.17 --seed 1 --preview --report "$DIR/simgen.json"
    step "stage: the whole dataset onto each of $NODES nodes (replicate), each file read once" stage "" \
        "${MPIRUN[@]}" "$BIN/stager" stage --source "$DIR/jets" --dest "$DIR/node{node}" \
        --policy replicate --report "$DIR/stage.json"
    step "verify every node's files against the manifest" verify "" \
        "${MPIRUN[@]}" "$BIN/stager" verify --source "$DIR/jets" --dest "$DIR/node{node}" --policy replicate
    train "train the small HEP-CNN (the benchmark's Adam at 0.001); validate on the held-out events" \
        --model hepcnn --config small --staged "$DIR/node{node}" \
        --val "$DIR/jets" --epochs 4 --batch 8 --workers 1 --optimizer adam --lr 0.001 \
        --checkpoint "$DIR/checkpoints"
    ;;
cosmogan)
    # Kurth et al. 2018's compute-bound probe: Mustafa et al.'s DCGAN
    # learning to make projected matter-density maps.
    step "simulate 32 boxes at one cosmology and cut them into 768 mass maps (64 x 64, CosmoGAN .npy), on $RANKS ranks" \
        simgen "" "${MPIRUN[@]}" "$BIN/simgen" massmaps --out "$DIR/maps" --maps 768 --size 64 --per-file 96 \
        --val-fraction 0.125 --seed 1 --preview --report "$DIR/simgen.json"
    step "stage: the whole dataset onto each of $NODES nodes (replicate), each file read once" stage "" \
        "${MPIRUN[@]}" "$BIN/stager" stage --source "$DIR/maps" --dest "$DIR/node{node}" \
        --policy replicate --report "$DIR/stage.json"
    step "verify every node's files against the manifest" verify "" \
        "${MPIRUN[@]}" "$BIN/stager" verify --source "$DIR/maps" --dest "$DIR/node{node}" --policy replicate
    train "train the small CosmoGAN (the reference's Adam: lr 0.0002, beta1 0.5); compare generated maps with held-out ones" \
        --model cosmogan --config small --staged "$DIR/node{node}" \
        --val "$DIR/maps" --epochs 8 --batch 4 --workers 1 --optimizer adam --lr 0.0002 --adam-beta1 0.5 \
        --checkpoint "$DIR/checkpoints"
    ;;
esac

"$BIN/demo-summary" --model "$MODEL" --dir "$DIR" --ranks "$RANKS" --nodes "$NODES" \
    --seconds $((SECONDS - STARTED))
