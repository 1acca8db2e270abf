#!/usr/bin/env bash
# A first stack in Go from the release's files and the official Pulumi CLI, no npm: the guide's
# "A first stack" shows the lines between the snippet marks, and
# tests/examples/first-stack.test.ts runs this very file (where the Go language host is
# installed). Run it in a directory holding this example's Pulumi.yaml, go.mod, go.sum and
# main.go, with PULUMI_CONFIG_PASSPHRASE set; EDGE_DIST (default ../edge-dist) and EDGE_PORT
# (default 8080) may be.
set -euo pipefail
: "${PULUMI_CONFIG_PASSPHRASE:?set it: the passphrase that encrypts the secrets of the stack}"
# [snippet: first-stack]
EDGE_DIST=${EDGE_DIST:-../edge-dist}  # the release's files (Installing); a path, not a URL
platform=$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')

# A backend for the state: here the local file system (a team: pulumi login <its backend's URL>).
pulumi login --local

# The SDK: go.mod requires it; the release's Go module is where it is (a path starting with
# ./, ../ or /). Pulumi's Go SDK comes from the module proxy at the version go.mod pins.
go mod edit -replace=github.com/pulumi-edge/pulumi-edge/sdk/go="$EDGE_DIST/pulumi-edge-go-0.2.0"

# The plugin, into the engine's plugin cache. (Packed with a download URL, the release's SDK
# tells the engine where to fetch it, and this line can go.)
pulumi plugin install resource edge 0.2.0 --file "$EDGE_DIST/pulumi-resource-edge-v0.2.0-$platform.tar.gz"

# The edge service from its archive, on loopback, until this shell exits.
mkdir -p edge-service && tar -xzf "$EDGE_DIST/edge-service-v0.2.0-$platform.tar.gz" -C edge-service
edge-service/edge-service serve --port "${EDGE_PORT:-8080}" --data edge-data 2> edge-service.log &
service=$! && trap 'kill $service; wait $service' EXIT
until curl -sf "http://127.0.0.1:${EDGE_PORT:-8080}/readyz" > /dev/null; do kill -0 $service; sleep 1; done

# The stack and its configuration; deploy (the Go host builds the program), check for drift,
# tear down.
pulumi stack init dev
pulumi config set edge:baseUrl "http://127.0.0.1:${EDGE_PORT:-8080}"
pulumi up --yes
pulumi preview --refresh --expect-no-changes
pulumi destroy --yes
# [/snippet]
