#!/usr/bin/env bash
# Installs what memtrail needs from Debian 12's packages, skipping what is already there.
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config python3 clang
  libclang-rt-14-dev  # libFuzzer and the sanitizers' runtimes for clang (CI runs the fuzzers)
  libunwind-dev libdw-dev libzstd-dev libmsgpack-cxx-dev
  libimgui-dev libglfw3-dev libstb-dev libgl-dev libgl1-mesa-dri
  libgtest-dev libgmock-dev libbenchmark-dev
  xvfb xauth
  chromium  # the report tests open `memtrail report`'s pages in it, headless
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm installs the report page's libraries at build time (cli/report_web); a Node.js from
# elsewhere that brings its own npm will do.
command -v npm > /dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "memtrail: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
