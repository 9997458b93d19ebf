#!/usr/bin/env bash
# Every ELF file memtrail builds or installs finds its libraries only relative to itself: each
# RUNPATH entry starts with $ORIGIN, or is an absolute folder outside the source and build trees
# (CUDA's, for the tests that link it). An empty entry means the working directory (a library
# planted where the program runs would be loaded), a build path one that may not exist, or be
# anyone's, where the program runs. The pip package copies these same files.
#   runpath_test.sh FOLDER...
set -euo pipefail
: "${MEMTRAIL_SOURCE_DIR:?}" "${MEMTRAIL_BUILD_DIR:?}"
checked=0
bad=0
while IFS= read -r -d '' file; do
  head -c 4 "$file" | grep -q $'\x7fELF' || continue
  checked=$((checked + 1))
  runpath=$(readelf -d "$file" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
  [ -n "$runpath" ] || continue
  # Entries are ':'-separated; a trailing ':' is an empty entry too.
  IFS=: read -r -a entries <<< "$runpath:x"
  unset 'entries[${#entries[@]}-1]'
  for entry in "${entries[@]}"; do
    case "$entry" in
      '') reason="an empty entry (the working directory)" ;;
      '$ORIGIN'|'$ORIGIN/'*) continue ;;
      "$MEMTRAIL_BUILD_DIR"*|"$MEMTRAIL_SOURCE_DIR"*|/tmp/*) reason="a build path" ;;
      /*) continue ;;
      *) reason="a relative path (resolved against the working directory)" ;;
    esac
    echo "runpath_test: $file: RUNPATH [$runpath] has $reason: '$entry'" >&2
    bad=$((bad + 1))
  done
done < <(find "$@" -type f \( -perm -u+x -o -name '*.so*' \) -print0)
echo "runpath_test: $checked ELF files checked in $*, $bad bad entries"
[ "$checked" -gt 0 ] && [ "$bad" -eq 0 ]
