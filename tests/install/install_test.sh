#!/usr/bin/env bash
# memtrail as a user gets it (tests/install/CMakeLists.txt runs each step as a test):
#   install_test.sh prefix            cmake --install into a fresh prefix; what is there
#   install_test.sh pkg_config        a C program built with `pkg-config memtrail`
#   install_test.sh find_package      a CMake project with find_package(memtrail CONFIG)
#   install_test.sh add_subdirectory  a CMake project that adds memtrail's source
#   install_test.sh no_test_packages  memtrail configured with neither GoogleTest nor Benchmark
# Each consumer records on the simulated device and the installed `memtrail summary` reads the
# snapshot it writes. The environment (set by CMakeLists.txt) names the folders and the tools.
set -euo pipefail
: "${MEMTRAIL_SOURCE_DIR:?}" "${MEMTRAIL_BUILD_DIR:?}" "${WORK:?}" "${CMAKE:?}" "${PKG_CONFIG:?}"
: "${CC:?}" "${CXX:?}" "${GENERATOR:?}" "${MAKE_PROGRAM:?}"
prefix=$WORK/prefix
export MEMTRAIL_DEVICE=sim:4GiB
unset LD_LIBRARY_PATH

fail() {
  echo "install_test: $*" >&2
  exit 1
}

# A consumer's project, configured with the tools memtrail was built with.
configure() {
  local source=$1 build=$2
  shift 2
  rm -rf "$build"
  "$CMAKE" -S "$source" -B "$build" -G "$GENERATOR" -DCMAKE_MAKE_PROGRAM="$MAKE_PROGRAM" \
    -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" \
    ${LAUNCHER:+-DCMAKE_C_COMPILER_LAUNCHER="$LAUNCHER" -DCMAKE_CXX_COMPILER_LAUNCHER="$LAUNCHER"} \
    "$@"
}

# Runs a consumer and reads its snapshot with the installed CLI: 68 MiB were allocated at the
# peak (64 + 3 + 1), 65 MiB are still allocated at the end.
run_consumer() {
  local program=$1 snapshot=$2
  "$program" "$snapshot"
  local summary
  summary=$("$prefix/bin/memtrail" summary "$snapshot")
  echo "$summary"
  grep -Eq "^ +peak allocated +68MiB " <<<"$summary" || fail "$snapshot: peak allocated is not 68 MiB"
  grep -Eq "^ +allocated +65MiB +2 blocks" <<<"$summary" || fail "$snapshot: 65 MiB are not allocated"
}

case "${1:-}" in
  prefix)
    rm -rf "$prefix"
    "$CMAKE" --install "$MEMTRAIL_BUILD_DIR" --prefix "$prefix"
    for file in bin/memtrail include/memtrail/memtrail.h include/memtrail/version.h \
                include/memtrail/recorder/recorder.hpp include/memtrail/core/caching_allocator.hpp \
                lib/cmake/memtrail/memtrail-config.cmake lib/cmake/memtrail/memtrail-config-version.cmake \
                lib/cmake/memtrail/memtrail-targets.cmake lib/pkgconfig/memtrail.pc \
                lib/librecorder.so share/doc/memtrail/recorder.md share/doc/memtrail/README.md; do
      [ -e "$prefix/$file" ] || fail "$file is not installed"
    done
    if [ -e "$MEMTRAIL_BUILD_DIR/bin/memtrail-viewer" ]; then
      [ -x "$prefix/bin/memtrail-viewer" ] || fail "bin/memtrail-viewer is not installed"
    fi
    # librecorder: a SONAME with the ABI's version, its symbols in the versioned nodes. (grep
    # reads a here-string: `readelf | grep -q` fails under pipefail when grep stops reading
    # before readelf is done.)
    dynamic=$(readelf -d "$prefix/lib/librecorder.so")
    grep -q "Library soname: \[librecorder.so.0\]" <<<"$dynamic" \
      || fail "librecorder.so has no SONAME librecorder.so.0"
    symbols=$(readelf --dyn-syms -W "$prefix/lib/librecorder.so")
    grep -q " memtrail_malloc@@MEMTRAIL_0.1$" <<<"$symbols" \
      || fail "memtrail_malloc is not in librecorder's MEMTRAIL_0.1 symbol node"
    grep -q " memtrail_memory_stats_json@@MEMTRAIL_0.2$" <<<"$symbols" \
      || fail "memtrail_memory_stats_json is not in librecorder's MEMTRAIL_0.2 symbol node"
    grep -q " memtrail_create_pool@@MEMTRAIL_0.2$" <<<"$symbols" \
      || fail "memtrail_create_pool is not in librecorder's MEMTRAIL_0.2 symbol node"
    grep -q 'R.*PATH.*\[\$ORIGIN/../lib\]' <<<"$(readelf -d "$prefix/bin/memtrail")" \
      || fail "bin/memtrail has no run path to the installed libraries"
    "$prefix/bin/memtrail" --version
    ;;
  pkg_config)
    rm -rf "$WORK/pkg_config"
    mkdir -p "$WORK/pkg_config"
    export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
    "$PKG_CONFIG" --modversion memtrail
    # The documented compile and link line (docs/recorder.md); no run path or LD_LIBRARY_PATH.
    # shellcheck disable=SC2046
    "$CC" -std=c11 -Wall -Wextra -Werror -o "$WORK/pkg_config/consumer" \
      "$MEMTRAIL_SOURCE_DIR/tests/install/consumer.c" $("$PKG_CONFIG" --cflags --libs memtrail)
    run_consumer "$WORK/pkg_config/consumer" "$WORK/pkg_config/consumer.memtrail"
    ;;
  find_package)
    configure "$MEMTRAIL_SOURCE_DIR/tests/install/find_package" "$WORK/find_package" \
      -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
    "$CMAKE" --build "$WORK/find_package"
    run_consumer "$WORK/find_package/c_api_consumer" "$WORK/find_package/c_api.memtrail"
    run_consumer "$WORK/find_package/cxx_api_consumer" "$WORK/find_package/cxx_api.memtrail"
    ;;
  add_subdirectory)
    # Debug: memtrail's libraries compile fastest unoptimized. GoogleTest and Benchmark are
    # hidden from the project: memtrail must not look for them when it is added.
    configure "$MEMTRAIL_SOURCE_DIR/tests/install/add_subdirectory" "$WORK/add_subdirectory" \
      -DMEMTRAIL_SOURCE_DIR="$MEMTRAIL_SOURCE_DIR" -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON
    "$CMAKE" --build "$WORK/add_subdirectory"
    run_consumer "$WORK/add_subdirectory/c_api_consumer" "$WORK/add_subdirectory/c_api.memtrail"
    run_consumer "$WORK/add_subdirectory/cxx_api_consumer" "$WORK/add_subdirectory/cxx_api.memtrail"
    ;;
  no_test_packages)
    # As on a machine without them: the tests are switched off, the benchmarks left to find
    # Google Benchmark (MEMTRAIL_BUILD_BENCH=AUTO).
    configure "$MEMTRAIL_SOURCE_DIR" "$WORK/no_test_packages" -DBUILD_TESTING=OFF \
      -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
      | tee "$WORK/no_test_packages.log"
    grep -q "the benchmarks are left out" "$WORK/no_test_packages.log" \
      || fail "configuring without Google Benchmark did not leave the benchmarks out"
    ;;
  *)
    echo "usage: $0 prefix|pkg_config|find_package|add_subdirectory|no_test_packages" >&2
    exit 2
    ;;
esac
