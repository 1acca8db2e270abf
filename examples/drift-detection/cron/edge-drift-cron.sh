#!/usr/bin/env bash
# The fleet's drift check without a CI system: run from cron, it checks every stack with
# `pulumi-edge drift`, keeps the last report, and notifies only when the report changed and is
# not clean (one message per new drift, not one an hour). Crontab line (hourly, at :17):
#
#   17 * * * * cd /srv/edge-infra && EDGE_API_KEY_FILE=/etc/edge/ci-drift.key examples/drift-detection/cron/edge-drift-cron.sh >>/var/log/edge-drift.log 2>&1
#
# Arguments, when given, choose the stacks instead (as for pulumi-edge drift: --stack DIR:STACK,
# --project DIR, --projects-dir DIR, --parallel N). Settings (environment):
#   EDGE_STACKS_DIR     the directory of Pulumi projects to check (default: stacks)
#   EDGE_API_KEY_FILE   a file holding a read key (edge-service keys create ci-drift --scope read)
#   EDGE_DRIFT_DIR      where reports are kept (default: ~/.edge-drift)
#   EDGE_DRIFT_NOTIFY   a command that gets the Markdown report on stdin
#                       (default: mail -s "edge drift" root)
set -uo pipefail
stacks=${EDGE_STACKS_DIR:-stacks}
out=${EDGE_DRIFT_DIR:-$HOME/.edge-drift}
notify=${EDGE_DRIFT_NOTIFY:-mail -s "edge drift" root}
[ "$#" -gt 0 ] || set -- --projects-dir "$stacks"
mkdir -p "$out"
if [ -n "${EDGE_API_KEY_FILE:-}" ]; then
  EDGE_API_KEY=$(cat "$EDGE_API_KEY_FILE")
  export EDGE_API_KEY
fi
# Never two runs at once (a slow run must not overlap the next hour's).
exec 9>"$out/lock"
if ! flock -n 9; then
  echo "$(date -u +%FT%TZ) edge drift: the previous run is still going; skipped"
  exit 0
fi

npx pulumi-edge drift "$@" --format markdown --junit "$out/junit.xml" >"$out/report.md"
code=$?
echo "$(date -u +%FT%TZ) edge drift: exit $code (0 clean, 1 drift, 2 error)"
if [ "$code" -eq 0 ]; then
  rm -f "$out/notified.md"
  exit 0
fi
# Notified already of this very report: stay quiet until it changes (or all is clean again).
if ! cmp -s "$out/report.md" "$out/notified.md"; then
  sh -c "$notify" <"$out/report.md" && cp "$out/report.md" "$out/notified.md"
fi
exit "$code"
