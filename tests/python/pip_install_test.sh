#!/usr/bin/env bash
# The package as a user gets it: `pip install` from a copy of python/ into a fresh virtual
# environment (offline, with the interpreter's own setuptools), then two lines of Python that
# record and dump a snapshot, read back by the memtrail command the package installed; and a
# wheel for machines without a compiler, tagged for the platform.
# Environment: PYTHON (with setuptools, wheel and venv), SOURCE_DIR, BUILD_DIR, WORK.
set -euo pipefail

fail() { echo "pip_install_test: $*" >&2; exit 1; }

rm -rf "$WORK"
mkdir -p "$WORK"
cp -r "$SOURCE_DIR/python" "$WORK/package"
rm -rf "$WORK/package/build" "$WORK/package/src/"*.egg-info

"$PYTHON" -m venv --system-site-packages "$WORK/venv"
MEMTRAIL_BUILD_DIR="$BUILD_DIR" "$WORK/venv/bin/pip" install --quiet --no-index \
  --no-build-isolation "$WORK/package"

# Nothing points at the build: the package finds what it carries.
cd "$WORK"
env -u LD_LIBRARY_PATH -u MEMTRAIL_LIBRARY -u MEMTRAIL_CLI -u PYTHONPATH MEMTRAIL_DEVICE=sim:1GiB \
  "$WORK/venv/bin/python" -c '
import memtrail; memtrail.record_memory_history(); block = memtrail.caching_allocator_alloc(5 << 20)
memtrail.dump_snapshot("run.memtrail")'
summary=$(env -u LD_LIBRARY_PATH "$WORK/venv/bin/memtrail" summary run.memtrail)
grep -q "allocated *5MiB *1 blocks" <<< "$summary" || fail "unexpected summary: $summary"

# The package's copies of the binaries find libraries relative to themselves only.
MEMTRAIL_SOURCE_DIR="$SOURCE_DIR" MEMTRAIL_BUILD_DIR="$BUILD_DIR" \
  "$SOURCE_DIR/tests/install/runpath_test.sh" "$WORK/venv/lib" > /dev/null \
  || fail "a binary of the installed package has a RUNPATH that reaches beyond it"

MEMTRAIL_BUILD_DIR="$BUILD_DIR" "$WORK/venv/bin/pip" wheel --quiet --no-index \
  --no-build-isolation --no-deps --wheel-dir "$WORK/wheels" "$WORK/package"
ls "$WORK/wheels"/memtrail-*-py3-none-linux_*.whl > /dev/null || fail "no platform wheel: $(ls "$WORK/wheels")"
echo "pip_install_test: installed, recorded, read back; wheel $(basename "$WORK"/wheels/*.whl)"
