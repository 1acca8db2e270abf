#!/usr/bin/env bash
# A first day in TypeScript from the release's files and the official Pulumi CLI: the guide's
# "A first stack" shows the lines between the snippet marks, and tests/examples/first-stack.test.ts
# runs this very file. Run it in a new directory holding a copy of this example (Pulumi.yaml,
# package.json, tsconfig.json, index.ts), with EDGE_DIST (default ../edge-dist) and EDGE_PORT
# (default 8080) if you like.
set -euo pipefail
# [snippet: first-stack]
# Before these lines: export PULUMI_CONFIG_PASSPHRASE (it encrypts the stack's secrets; every later
# command on the stack needs the same one) and OIDC_CLIENT_SECRET (the route's OIDC client secret).
: "${PULUMI_CONFIG_PASSPHRASE:?export it first: the passphrase that encrypts the secrets of the stack}"
: "${OIDC_CLIENT_SECRET:?export it first: the client secret of the OIDC module of the route (any text, to try)}"
EDGE_DIST=${EDGE_DIST:-../edge-dist}  # the release's files (Installing)
url=http://127.0.0.1:${EDGE_PORT:-8080}

# A backend for the state, in this project's .state (`pulumi login --local` would use the account's
# ~/.pulumi, shared by every project on it; a team logs in to its backend's URL).
mkdir -p .state && pulumi login "file://$PWD/.state"

# The packages, pinned to what was tested: pulumi-edge from its tarball, Pulumi's SDK at the
# CLI's version, and TypeScript (which Pulumi's SDK runs the program with).
npm install --save-exact "$EDGE_DIST/pulumi-edge-0.2.0.tgz" @pulumi/pulumi@3.259.0
npm install --save-exact --save-dev typescript@5.9.3

# The edge service from the package, on loopback, until this shell exits. Ready once it says it
# listens: not merely once something answers on the port, which another process may hold.
node_modules/.bin/edge-service serve --port "${EDGE_PORT:-8080}" --data edge-data > edge-service.log 2>&1 &
service=$! && trap 'kill $service 2> /dev/null; wait $service' EXIT
until grep -q '^edge-service listening on' edge-service.log || ! kill -0 $service 2> /dev/null; do sleep 1; done
grep '^edge-service listening on' edge-service.log || { cat edge-service.log >&2; false; }

# The stack's own key, before anyone's: the first key turns authentication on, and from then on the
# service refuses a request without a key (keys create says so). It goes from the command to the
# stack's encrypted config, shown nowhere.
pulumi stack init dev
node_modules/.bin/edge-service keys create deployer --scope write --data edge-data |
  pulumi config set --secret edge:apiKey
pulumi config set edge:baseUrl "$url"
pulumi config set --secret oidcClientSecret "$OIDC_CLIENT_SECRET"
pulumi up --yes

# Someone changes the route out of band, with a key of their own; the drift check fails and says
# what changed and who changed it (by key "ops-console"); `up --refresh` puts the program back.
ops_key=$(node_modules/.bin/edge-service keys create ops-console --scope write --data edge-data)
EDGE_API_KEY=$ops_key node_modules/.bin/edge-service request PATCH --url "$url" \
  "/edges/https/$(pulumi stack output edgeId)/routes/$(pulumi stack output routeId)" \
  --body '{"backend": {"backend_id": "bkd_hotfix"}}' > /dev/null
if pulumi preview --refresh --expect-no-changes --diff; then echo "no drift found" >&2; false; fi
pulumi up --refresh --yes

# An edge made outside Pulumi, adopted: `pulumi import` (the packaged provider's type; the plugin
# is the package's, named in Pulumi.yaml) records it in the state and writes its code, a module of
# its own that the program imports. --protect=false: the program decides what is protected (an
# imported resource is protected otherwise, and `pulumi destroy` refuses it); --yes: no prompt.
legacy=$(EDGE_API_KEY=$ops_key node_modules/.bin/edge-service request POST /edges/https --url "$url" \
  --body '{"description": "made by hand", "hostports": ["legacy.example.com:443"]}' |
  node -p 'JSON.parse(require("fs").readFileSync(0, "utf8")).id')
pulumi import edge:index:HttpsEdge legacy "$legacy" --yes --protect=false --out imported.ts
echo 'import "./imported";' >> index.ts
pulumi preview --refresh --expect-no-changes  # the service and the program agree: nothing to do

# Tear down: every resource of the stack, the imported edge too. The service holds no edge after.
pulumi destroy --yes
EDGE_API_KEY=$ops_key node_modules/.bin/edge-service request GET /edges/https --url "$url"
# [/snippet]
