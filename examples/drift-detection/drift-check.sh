#!/usr/bin/env bash
# Drift detection end to end: start an edge service with an admin key, make CI its own `read` key,
# deploy, change the route out of band over HTTP (as someone with the API would), watch
# `pulumi preview --refresh --expect-no-changes` with the read key fail naming the drift, see that
# key refused (403) when it tries to change anything, restore with `pulumi up --refresh` and the
# deploy key, and clean up.
# Needs `pulumi` on PATH and a backend you are logged in to (`pulumi login --local` works).
set -euo pipefail
cd "$(dirname "$0")"
stack=${STACK:-drift-demo}
cli=$(node -p 'require.resolve("pulumi-edge/cli")')
edge_service() { node "$cli" "$@"; } # or: npx edge-service

data=$(mktemp -d -t edge-drift-XXXXXX)
log=$(mktemp -t edge-drift-log-XXXXXX)
# The server is started as node itself, not through the function: a function run with `&` is a
# subshell, and `$!` would be that subshell, not the server, so killing it would leave node running.
# The admin ("bootstrap") key goes to the server in its environment, never on a command line.
admin=$(node -p 'require("node:crypto").randomBytes(32).toString("base64url")')
EDGE_API_KEY="$admin" node "$cli" serve --port 0 --data "$data" >"$log" 2>/dev/null &
server=$!
cleanup() { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$data" "$log"; }
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq 100); do grep -q "listening on" "$log" && break; sleep 0.1; done
url=$(sed -n 's/^edge-service listening on \(http[^ ]*\).*/\1/p' "$log")
echo "== edge service at $url"
# [snippet: read-key]
# CI's drift check gets a key that can read and nothing else (shown once; store it as a CI secret).
read_key=$(edge_service keys create ci-drift --scope read --data "$data")
# [/snippet]

pulumi stack select --create "$stack" --non-interactive >/dev/null
pulumi config set edge:baseUrl "$url" --stack "$stack"
EDGE_API_KEY="$admin" pulumi up --yes --skip-preview --non-interactive --stack "$stack"
edge=$(pulumi stack output edgeId --stack "$stack")
route=$(pulumi stack output routeId --stack "$stack")

echo "== out of band: someone points the route at another backend"
EDGE_API_KEY="$admin" edge_service request PATCH "/edges/https/$edge/routes/$route" --url "$url" \
  --body '{"backend": {"backend_id": "bkd_hotfix"}}' >/dev/null

echo "== drift check (what CI runs): must fail and name the drift"
if EDGE_API_KEY="$read_key" pulumi preview --refresh --expect-no-changes --diff --non-interactive --stack "$stack"; then
  echo "drift was not detected" >&2
  exit 1
fi

echo "== the read key cannot change anything: must fail with a 403"
if EDGE_API_KEY="$read_key" pulumi up --refresh --yes --skip-preview --non-interactive --stack "$stack"; then
  echo "the read key changed the service" >&2
  exit 1
fi

echo "== restore the declared configuration (the deploy key)"
EDGE_API_KEY="$admin" pulumi up --refresh --yes --skip-preview --non-interactive --stack "$stack"
EDGE_API_KEY="$read_key" pulumi preview --refresh --expect-no-changes --non-interactive --stack "$stack"
echo "== no drift left"

EDGE_API_KEY="$admin" pulumi destroy --yes --skip-preview --non-interactive --stack "$stack"
pulumi stack rm --yes --non-interactive --stack "$stack" >/dev/null
