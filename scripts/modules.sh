#!/usr/bin/env bash
# modules.sh: fail when a Go module of the repository is not tidy or when
# go.work.sum is not what the go command writes for this workspace.
# modules.sh --write makes them so (make tidy).
#
# Modules: every go.mod in the repository (the workspace's and the tools'),
# each tidied on its own (GOWORK=off), as `go mod tidy` sees it — except
# tools/carvel/*: wrappers that build third-party binaries (kapp-controller
# and the Carvel tools) at pinned versions. Their go.sum holds what those
# builds need (the build refuses a missing line); tidy would want the test
# closure of every third-party dependency too, which for kapp-controller
# does not even resolve (an ambiguous cloud.google.com/go import in a
# dependency's tests), and is not ours to keep.
#
# go.work.sum: rebuilt from nothing in a temporary copy of the tree by the
# commands that write it — `go mod download`, `go list -m all` (gopls,
# govulncheck and dependency tools run it) and `go list -deps -test` over
# every workspace package, with and without the compose build tag — and
# compared byte for byte with the committed file. A fresh clone therefore
# stays clean whichever of them a developer's tools run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

write=false
case "${1:-}" in
--write) write=true ;;
"") ;;
*) echo "usage: $0 [--write]" >&2; exit 2 ;;
esac

fail=0

# The files of the working tree as git sees them (tracked and new, not
# ignored, not deleted), NUL-separated.
tree_files() {
	git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
		[ -e "$f" ] && printf '%s\0' "$f"
	done
}

for gomod in $(git ls-files --cached --others --exclude-standard '*go.mod' | grep -v '/testdata/' | grep -v '^tools/carvel/'); do
	m=$(dirname "$gomod")
	[ -e "$gomod" ] || continue
	if $write; then
		(cd "$m" && GOWORK=off go mod tidy)
	elif ! out=$(cd "$m" && GOWORK=off go mod tidy -diff 2>&1); then
		echo "$m: go mod tidy would change the module:" >&2
		echo "$out" | grep -v '^go: downloading' >&2
		fail=1
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tree_files | tar -c --null -T - | tar -x -C "$tmp"
rm -f "$tmp/go.work.sum"
(
	cd "$tmp"
	export GOWORK=$tmp/go.work
	go mod download
	go list -m all >/dev/null
	pkgs=$(go list -m -f '{{.Dir}}/...')
	# shellcheck disable=SC2086 # one pattern per module
	go list -deps -test $pkgs >/dev/null
	# shellcheck disable=SC2086
	go list -deps -test -tags compose $pkgs >/dev/null
)

if $write; then
	rm -f "$root/go.work.sum"
	if [ -e "$tmp/go.work.sum" ]; then cp "$tmp/go.work.sum" "$root/go.work.sum"; fi
elif ! diff -u --label go.work.sum --label "go.work.sum as the go command writes it" \
	"$( [ -e "$root/go.work.sum" ] && echo "$root/go.work.sum" || echo /dev/null)" \
	"$( [ -e "$tmp/go.work.sum" ] && echo "$tmp/go.work.sum" || echo /dev/null)" >&2; then
	echo "go.work.sum is stale" >&2
	fail=1
fi

if [ "$fail" != 0 ]; then
	echo "run 'make tidy' and commit the result" >&2
	exit 1
fi
