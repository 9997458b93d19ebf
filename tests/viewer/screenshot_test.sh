#!/bin/sh
# Renders one view of a snapshot with memtrail-viewer under Xvfb and checks the PNG shows it.
#   screenshot_test.sh VIEWER PNG_CHECK MIN_CONTENT OUT.png VIEWER_ARGS...
# PNG_MIN_COLOURS in the environment lowers png_check's 24 distinct colours (the loading screen);
# PNG_MARK="RRGGBB FRACTION" asks for that colour, only in the top FRACTION of the image.
set -eu
viewer=$1
png_check=$2
min_content=$3
out=$4
shift 4
if ! command -v xvfb-run >/dev/null 2>&1; then
    echo "screenshot_test: xvfb-run is missing; install the xvfb package (apt-get install xvfb)" \
         "to run the viewer's screenshot tests" >&2
    exit 1
fi
rm -f "$out"
# Sanitizer builds name libraries to keep loaded in the viewer (tests/viewer/CMakeLists.txt).
if [ -n "${MEMTRAIL_VIEWER_PRELOAD:-}" ]; then
    set -- env LD_PRELOAD="$MEMTRAIL_VIEWER_PRELOAD" "$viewer" --screenshot "$out" "$@"
else
    set -- "$viewer" --screenshot "$out" "$@"
fi
xvfb-run -a -s "-screen 0 1920x1080x24" "$@"
# shellcheck disable=SC2086 # PNG_MARK is two arguments
"$png_check" "$out" "$min_content" "${PNG_MIN_COLOURS:-24}" ${PNG_MARK:-}
