#!/usr/bin/env bash
# The main job: install what is missing, build, record a sample workload on the simulated
# device, dump its snapshot, print the allocator's report, and open the snapshot in the viewer
# (or, with no display, write screenshots of the viewer's main views).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
mkdir -p demo
build/bin/sample_record_and_dump demo/demo.memtrail
echo
build/bin/memtrail summary demo/demo.memtrail
echo
build/bin/memtrail top demo/demo.memtrail --at peak -n 5
if [ -x build/bin/memtrail-viewer ]; then
  if [ -n "${DISPLAY:-}" ]; then
    exec build/bin/memtrail-viewer demo/demo.memtrail
  fi
  for view in timeline segments flame stats; do
    xvfb-run -a -s "-screen 0 1600x1000x24" build/bin/memtrail-viewer \
      --screenshot "demo/$view.png" --view "$view" --at peak --size 1600x1000 demo/demo.memtrail
  done
  echo "no display: screenshots of the viewer written to demo/*.png"
fi
