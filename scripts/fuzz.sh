#!/usr/bin/env bash
# Runs every Fuzz target of the repository for FUZZTIME each (default 30s).
# Usage: scripts/fuzz.sh [FUZZTIME]
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-${FUZZTIME:-30s}}"
status=0
while IFS= read -r line; do
  file="${line%%:*}"
  name="$(sed -E 's/^.*func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")"
  dir="$(dirname "$file")"
  # The module root is the nearest directory with a go.mod.
  mod="$dir"
  while [ ! -f "$mod/go.mod" ]; do mod="$(dirname "$mod")"; done
  pkg="./${dir#"$mod"/}"
  [ "$dir" = "$mod" ] && pkg="."
  echo "== $name ($mod $pkg, $fuzztime)"
  if ! (cd "$mod" && go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"); then
    status=1
  fi
done < <(git ls-files '*_test.go' | xargs grep -n '^func Fuzz' | sort)
exit $status
