#!/usr/bin/env bash
# A first day in Python from the release's files and the official Pulumi CLI, no npm: the guide's
# "A first stack" shows the lines between the snippet marks, and tests/examples/first-stack.test.ts
# runs this very file. Run it in a new directory holding a copy of this example (Pulumi.yaml,
# __main__.py, requirements.txt), with EDGE_DIST (default ../edge-dist) and EDGE_PORT (default 8080)
# if you like.
set -euo pipefail
# [snippet: first-stack]
# Before these lines: export PULUMI_CONFIG_PASSPHRASE (it encrypts the stack's secrets; every later
# command on the stack needs the same one) and OIDC_CLIENT_SECRET (the route's OIDC client secret).
: "${PULUMI_CONFIG_PASSPHRASE:?export it first: the passphrase that encrypts the secrets of the stack}"
: "${OIDC_CLIENT_SECRET:?export it first: the client secret of the OIDC module of the route (any text, to try)}"
export EDGE_DIST=${EDGE_DIST:-../edge-dist}  # the release's files (Installing); requirements.txt reads it
platform=$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m | sed 's/x86_64/amd64/; s/aarch64/arm64/')
url=http://127.0.0.1:${EDGE_PORT:-8080}

# A backend for the state, in this project's .state (`pulumi login --local` would use the account's
# ~/.pulumi, shared by every project on it; a team logs in to its backend's URL).
mkdir -p .state && pulumi login "file://$PWD/.state"

# The program's packages in its virtualenv (Pulumi.yaml names it): pulumi and the SDK's wheel.
python3 -m venv venv
venv/bin/pip install -r requirements.txt

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
# stack's encrypted config, shown nowhere.
pulumi stack init dev
edge-service/edge-service keys create deployer --scope write --data edge-data |
  pulumi config set --secret edge:apiKey
pulumi config set edge:baseUrl "$url"
pulumi config set --secret oidcClientSecret "$OIDC_CLIENT_SECRET"
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

# An edge made outside Pulumi, adopted: `pulumi import` records it in the state and writes its code,
# a module of its own that the program imports. --protect=false: the program decides what is
# protected (an imported resource is protected otherwise, and `pulumi destroy` refuses it); --yes:
# no prompt.
legacy=$(EDGE_API_KEY=$ops_key edge-service/edge-service request POST /edges/https --url "$url" \
  --body '{"description": "made by hand", "hostports": ["legacy.example.com:443"]}' |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
pulumi import edge:index:HttpsEdge legacy "$legacy" --yes --protect=false --out imported.py
echo 'import imported' >> __main__.py
pulumi preview --refresh --expect-no-changes  # the service and the program agree: nothing to do

# Tear down: every resource of the stack, the imported edge too. The service holds no edge after.
pulumi destroy --yes
EDGE_API_KEY=$ops_key edge-service/edge-service request GET /edges/https --url "$url"
EDGE_API_KEY=$ops_key edge-service/edge-service request GET /edges/tls --url "$url"
# [/snippet]
