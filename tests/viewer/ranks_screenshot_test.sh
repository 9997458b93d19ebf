#!/bin/sh
# The Ranks view of 1,000 ranks from their summaries, under Xvfb: a job of 1,000 rank snapshots
# made from real DDP ranks (jobs.tar.gz's ddp__rank0, rank 500 its ddp__rank1), summarized by
# `memtrail summarize`, opened as a folder by memtrail-viewer; the picture must show the outlier's
# red mark at the top (its row first) and the heatmap below.
#   ranks_screenshot_test.sh MAKE_RANK_FILES MEMTRAIL VIEWER PNG_CHECK TRACES OUT_DIR
set -eu
make_rank_files=$1
memtrail=$2
viewer=$3
png_check=$4
traces=$5
out=$6
here=$(dirname "$0")
rm -rf "$out/snapshots" "$out/summaries"
mkdir -p "$out"
"$make_rank_files" "$traces/ddp__rank0.pickle" "$traces/ddp__rank1.pickle" 500 1000 \
    "$out/snapshots" pickle > /dev/null
"$memtrail" summarize -o "$out/summaries" "$out/snapshots" > /dev/null
# memtrail ranks names rank 500, the one the picture must show first.
"$memtrail" ranks "$out/summaries" |
    grep -q "^1 outlier (more than 3.5 robust deviations from the median): rank 500\$"
# The outlier mark (255, 80, 80) only in the top quarter: rank 500 at its place among 1,000
# one-pixel rows would be far below.
PNG_MARK="ff5050 0.25" "$here/screenshot_test.sh" "$viewer" "$png_check" 0.3 \
    "$out/ranks_1000.png" --view ranks --size 1280x800 "$out/summaries"
