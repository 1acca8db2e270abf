#!/usr/bin/env bash
# Two `npm run provision` at once (two terminals, two CI jobs on one runner) from clean caches of
# ours: a fresh PULUMI_HOME and engine build tree each time (Go's own module and build caches are
# left as they are). Both must succeed, and the engine they leave must run. Prints what each did.
#   bash scripts/check-concurrent-provision.sh
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PULUMI_HOME="$work/pulumi-home" PULUMI_EDGE_BUILD_DIR="$work/engine-build"
started=$(date +%s)
bash scripts/provision-pulumi.sh > "$work/one.log" 2>&1 & one=$!
bash scripts/provision-pulumi.sh > "$work/two.log" 2>&1 & two=$!
status=0
wait "$one" || { echo "first provisioning failed:"; cat "$work/one.log"; status=1; }
wait "$two" || { echo "second provisioning failed:"; cat "$work/two.log"; status=1; }
version=$(node -p 'require("./package.json").dependencies["@pulumi/pulumi"]')
"$PULUMI_HOME/versions/$version/bin/pulumi" version || status=1
echo "== first:";  tail -4 "$work/one.log"
echo "== second:"; tail -4 "$work/two.log"
echo "== both done in $(( $(date +%s) - started )) s, status $status"
exit $status
