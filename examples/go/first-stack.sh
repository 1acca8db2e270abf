#!/usr/bin/env bash
# A first day in Go from the release's files and the official Pulumi CLI, no npm: the guide's
# "A first stack" shows the lines between the snippet marks, and tests/examples/first-stack.test.ts
# runs this very file (where the Go language host is installed). Run it in a new directory holding
# a copy of this example (Pulumi.yaml, go.mod, go.sum, main.go), with EDGE_DIST (default
# ../edge-dist) and EDGE_PORT (default 8080) if you like.
set -euo pipefail
# [snippet: first-stack]
# Before these lines: export PULUMI_CONFIG_PASSPHRASE (it encrypts the stack's secrets; every later
# command on the stack needs the same one).
: "${PULUMI_CONFIG_PASSPHRASE:?export it first: the passphrase that encrypts the secrets of the stack}"
EDGE_DIST=${EDGE_DIST:-../edge-dist}  # the release's files (Installing); a path, not a URL
platform=$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')
url=http://127.0.0.1:${EDGE_PORT:-8080}

# A backend for the state, in this project's .state (`pulumi login --local` would use the account's
# ~/.pulumi, shared by every project on it; a team logs in to its backend's URL).
mkdir -p .state && pulumi login "file://$PWD/.state"

# The SDK: go.mod requires it; the release's Go module is where it is (a path starting with
# ./, ../ or /). Pulumi's Go SDK comes from the module proxy at the version go.mod pins.
go mod edit -replace=github.com/pulumi-edge/pulumi-edge/sdk/go="$EDGE_DIST/pulumi-edge-go-0.2.0"

# The plugin, into the engine's plugin cache. (Packed with a download URL, the release's SDK
# tells the engine where to fetch it, and this line can go.)
pulumi plugin install resource edge 0.2.0 --file "$EDGE_DIST/pulumi-resource-edge-v0.2.0-$platform.tar.gz"

# The edge service from its archive, on loopback, until this shell exits. Ready once it says it
# listens: not merely once something answers on the port, which another process may hold.
mkdir -p edge-service && tar -xzf "$EDGE_DIST/edge-service-v0.2.0-$platform.tar.gz" -C edge-service
edge-service/edge-service serve --port "${EDGE_PORT:-8080}" --data edge-data > edge-service.log 2>&1 &
service=$! && trap 'kill $service 2> /dev/null; wait $service' EXIT
until grep -q '^edge-service listening on' edge-service.log || ! kill -0 $service 2> /dev/null; do sleep 1; done
grep '^edge-service listening on' edge-service.log || { cat edge-service.log >&2; false; }

# The stack's own key, before anyone's: the first key turns authentication on, and from then on the
# service refuses a request without a key (keys create says so). It goes from the command to the
# stack's encrypted config, shown nowhere. Then deploy (the Go host builds the program).
pulumi stack init dev
edge-service/edge-service keys create deployer --scope write --data edge-data |
  pulumi config set --secret edge:apiKey
pulumi config set edge:baseUrl "$url"
pulumi up --yes

# Someone changes the route out of band, with a key of their own; the drift check fails and says
# what changed and who changed it (by key "ops-console"); `up --refresh` puts the program back.
# (A route's id is <edgeId>/<routeId>.)
ops_key=$(edge-service/edge-service keys create ops-console --scope write --data edge-data)
route=$(pulumi stack output routeId)
EDGE_API_KEY=$ops_key edge-service/edge-service request PATCH --url "$url" \
  "/edges/https/${route%/*}/routes/${route#*/}" --body '{"backend": {"backend_id": "bkd_hotfix"}}' > /dev/null
if pulumi preview --refresh --expect-no-changes --diff; then echo "no drift found" >&2; false; fi
pulumi up --refresh --yes

# An edge made outside Pulumi, adopted: `pulumi import` records it in the state and writes its code.
# --protect=false: the program decides what is protected (an imported resource is protected
# otherwise, and `pulumi destroy` refuses it); --yes: no prompt. Go's code is a whole program
# (package main, its own func main), which does not build beside main.go ("main redeclared"):
# its main becomes a function of the package, run on main.go's context, called from main.go.
legacy=$(EDGE_API_KEY=$ops_key edge-service/edge-service request POST /edges/https --url "$url" \
  --body '{"description": "made by hand", "hostports": ["legacy.example.com:443"]}' |
  node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).id')
pulumi import edge:index:HttpsEdge legacy "$legacy" --yes --protect=false --out imported.go
sed -e 's/^func main() {$/func importedResources(ctx *pulumi.Context) error { run := func(f pulumi.RunFunc) error { return f(ctx) }/' \
  -e 's/pulumi\.Run(/return run(/' imported.go > imported.go.new && mv imported.go.new imported.go && gofmt -w imported.go
sed 's/^\([[:blank:]]*\)return nil$/\1return importedResources(ctx)/' main.go > main.go.new && mv main.go.new main.go
pulumi preview --refresh --expect-no-changes  # the service and the program agree: nothing to do

# Tear down: every resource of the stack, the imported edge too. The service holds no edge after.
pulumi destroy --yes
EDGE_API_KEY=$ops_key edge-service/edge-service request GET /edges/https --url "$url"
# [/snippet]
