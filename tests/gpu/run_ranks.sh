#!/usr/bin/env bash
# An FSDP2 job on every GPU present (tests/gpu/fsdp2_rank.py), run three ways with and without
# PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True:
#   torch   torchrun alone (PyTorch's allocator: the truth);
#   around  memtrail run -- torchrun ...;
#   inside  torchrun --no-python ... memtrail run -- python ....
# Checks (tests/gpu/run_ranks_check.py): one snapshot per rank, named by rank
# (memtrail-rank<r>-<pid>.memtrail), each with its job identity (job id, rank, local rank, world
# size), none for the launcher, every file named in memtrail run's closing message, and each
# rank's peak allocated, peak reserved and device allocations equal to PyTorch's alone.
#
#     tests/gpu/run_ranks.sh BUILD OUT
#
# Writes OUT/<conf>/<way>/ (snapshots, logs, each rank's JSON) and OUT/run_ranks.json; prints a
# table and exits 1 when a check fails. About 3 minutes on two H200s.
set -u
build=$(cd "$1" && pwd)
mkdir -p "$2"
out=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
gpus=$(nvidia-smi -L | wc -l)
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
library=$build/lib/librecorder.so
status=0

run_way() {  # conf way command...
    local folder=$out/$1/$2
    mkdir -p "$folder"
    shift 2
    (cd "$folder" && timeout 120 "$@") > "$folder/log.txt" 2>&1 || {
        echo "FAILED: $* (log: $folder/log.txt)"; tail -20 "$folder/log.txt"; status=1; }
}

for conf in plain expandable; do
    if [ "$conf" = expandable ]; then
        export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
    else
        unset PYTORCH_CUDA_ALLOC_CONF
    fi
    launch=(-m torch.distributed.run --standalone --nproc-per-node "$gpus")
    run_way "$conf" torch "$python" "${launch[@]}" "$here/fsdp2_rank.py" "$library" . torch
    run_way "$conf" around "$build/bin/memtrail" run -- \
        "$python" "${launch[@]}" "$here/fsdp2_rank.py" "$library" . around
    run_way "$conf" inside "$python" "${launch[@]}" --no-python \
        "$build/bin/memtrail" run -- "$python" "$here/fsdp2_rank.py" "$library" . inside
done

"$python" "$here/run_ranks_check.py" "$out" "$gpus" || status=1
exit $status
