#!/usr/bin/env bash
# The size rules of the project (README, "How we write code"), checked on
# every Go file git tracks outside gen/: no file over 500 lines and no
# receiver type with more than 30 methods (per package, tests included).
# Functions over 80 lines are golangci-lint's funlen.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
files=$(git ls-files '*.go' | grep -v '^gen/' || true)
while read -r n f; do
	[ "$f" = total ] && continue
	if [ "$n" -gt 500 ]; then
		echo "$f: $n lines, more than 500: split it by responsibility" >&2
		fail=1
	fi
done < <(echo "$files" | xargs wc -l)
# Methods per receiver type, per package directory.
while read -r count key; do
	if [ "$count" -gt 30 ]; then
		echo "${key%%|*}: receiver ${key##*|} has $count methods, more than 30: split it into rooms" >&2
		fail=1
	fi
done < <(for f in $files; do
	dir=$(dirname "$f")
	sed -nE 's/^func \([A-Za-z_][A-Za-z0-9_]* \*?([A-Za-z_][A-Za-z0-9_]*)(\[[^]]*\])?\) [A-Za-z_].*/\1/p' "$f" | sed "s#^#$dir|#"
done | sort | uniq -c)
exit $fail
