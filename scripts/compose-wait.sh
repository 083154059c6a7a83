#!/usr/bin/env bash
# compose-wait.sh PROJECT [SECONDS]: wait until every running container of
# the compose project that has a health check reports healthy; on timeout,
# name the ones that are not and exit 1.
set -euo pipefail
project=$1
deadline=$(( $(date +%s) + ${2:-300} ))
while :; do
	pending=()
	for c in $(docker ps -q --filter "label=com.docker.compose.project=$project"); do
		state=$(docker inspect -f '{{.Name}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$c")
		case "$state" in
			*" healthy"|*" none") ;;
			*) pending+=("$state") ;;
		esac
	done
	if [ ${#pending[@]} -eq 0 ]; then
		echo "every container of $project is healthy"
		exit 0
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "not healthy in time: ${pending[*]}" >&2
		exit 1
	fi
	sleep 2
done
