#!/usr/bin/env bash
# A first stack in TypeScript from the release's files and the official Pulumi CLI: the guide's
# "A first stack" shows the lines between the snippet marks, and
# tests/examples/first-stack.test.ts runs this very file. Run it in a directory holding this
# example's Pulumi.yaml, package.json, tsconfig.json and index.ts, with PULUMI_CONFIG_PASSPHRASE
# and OIDC_CLIENT_SECRET set; EDGE_DIST (default ../edge-dist) and EDGE_PORT (default 8080) may be.
set -euo pipefail
: "${PULUMI_CONFIG_PASSPHRASE:?set it: the passphrase that encrypts the secrets of the stack}"
: "${OIDC_CLIENT_SECRET:?set it: the secret of the OIDC client of the route}"
# [snippet: first-stack]
EDGE_DIST=${EDGE_DIST:-../edge-dist}  # the release's files (Installing)

# A backend for the state: here the local file system (a team: pulumi login <its backend's URL>).
pulumi login --local

# The packages, pinned to what was tested: pulumi-edge from its tarball, Pulumi's SDK at the
# CLI's version, and TypeScript (which Pulumi's SDK runs the program with).
npm install --save-exact "$EDGE_DIST/pulumi-edge-0.2.0.tgz" @pulumi/pulumi@3.259.0
npm install --save-exact --save-dev typescript@5.9.3

# The edge service from the package, on loopback, until this shell exits.
node_modules/.bin/edge-service serve --port "${EDGE_PORT:-8080}" --data edge-data 2> edge-service.log &
service=$! && trap 'kill $service; wait $service' EXIT
until curl -sf "http://127.0.0.1:${EDGE_PORT:-8080}/readyz" > /dev/null; do kill -0 $service; sleep 1; done

# The stack and its configuration; deploy, check for drift, tear down.
pulumi stack init dev
pulumi config set edge:baseUrl "http://127.0.0.1:${EDGE_PORT:-8080}"
pulumi config set --secret oidcClientSecret "$OIDC_CLIENT_SECRET"
pulumi up --yes
pulumi preview --refresh --expect-no-changes
pulumi destroy --yes
# [/snippet]
