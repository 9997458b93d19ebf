#!/usr/bin/env bash
# The package as a user gets it: `pip install` from a read-only copy of python/ (a checkout
# nobody may write to: setuptools' build/ and egg-info go elsewhere) into a fresh virtual
# environment (offline, with the interpreter's own setuptools), then two lines of Python that
# record and dump a snapshot, read back by the memtrail command the package installed, and
# memtrail-viewer on PATH when the build has it; and a wheel for machines without a compiler,
# tagged for the platform, carrying librecorder, the memtrail command and the viewer.
# Environment: PYTHON (with setuptools, wheel and venv), SOURCE_DIR, BUILD_DIR, WORK.
set -euo pipefail

fail() { echo "pip_install_test: $*" >&2; exit 1; }

[ ! -d "$WORK" ] || chmod -R u+w "$WORK"
rm -rf "$WORK"
mkdir -p "$WORK"
cp -r "$SOURCE_DIR/python" "$WORK/package"
rm -rf "$WORK/package/build" "$WORK/package/src/"*.egg-info
chmod -R a-w "$WORK/package"

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

# Both commands on PATH; the viewer where the build has one, else a clear word on why not.
export PATH="$WORK/venv/bin:$PATH"
command -v memtrail-viewer > /dev/null || fail "memtrail-viewer is not on PATH"
if [ -x "$BUILD_DIR/bin/memtrail-viewer" ]; then
  memtrail-viewer --version | grep -q "memtrail-viewer" || fail "memtrail-viewer --version failed"
else
  ! memtrail-viewer --version 2> viewer.err || fail "memtrail-viewer ran without being built"
  grep -q "built without it" viewer.err || fail "unexpected memtrail-viewer error: $(cat viewer.err)"
fi

# The package's copies of the binaries find libraries relative to themselves only.
MEMTRAIL_SOURCE_DIR="$SOURCE_DIR" MEMTRAIL_BUILD_DIR="$BUILD_DIR" \
  "$SOURCE_DIR/tests/install/runpath_test.sh" "$WORK/venv/lib" > /dev/null \
  || fail "a binary of the installed package has a RUNPATH that reaches beyond it"

MEMTRAIL_BUILD_DIR="$BUILD_DIR" "$WORK/venv/bin/pip" wheel --quiet --no-index \
  --no-build-isolation --no-deps --wheel-dir "$WORK/wheels" "$WORK/package"
ls "$WORK/wheels"/memtrail-*-py3-none-linux_*.whl > /dev/null || fail "no platform wheel: $(ls "$WORK/wheels")"
expected="memtrail/_native/librecorder.so.0 memtrail/_native/memtrail"
[ ! -x "$BUILD_DIR/bin/memtrail-viewer" ] || expected+=" memtrail/_native/memtrail-viewer"
"$PYTHON" - "$WORK"/wheels/memtrail-*.whl $expected <<'CHECK' || fail "the wheel lacks a file or a command"
import sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
names = wheel.namelist()
# A platform wheel keeps the package under memtrail-VERSION.data/purelib/.
missing = [name for name in sys.argv[2:] if not any(n.endswith("/" + name) for n in names)]
entry_points = wheel.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
missing += [command for command in ("memtrail =", "memtrail-viewer =") if command not in entry_points]
sys.exit(f"pip_install_test: missing from the wheel: {missing}" if missing else 0)
CHECK
# root writes through a-w: nothing in the copy may be newer than the environment made after it.
[ -z "$(find "$WORK/package" -newer "$WORK/venv/pyvenv.cfg" -print -quit)" ] \
  || fail "the build wrote into the package's source folder"
echo "pip_install_test: installed, recorded, read back; wheel $(basename "$WORK"/wheels/*.whl)"
