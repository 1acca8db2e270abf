#!/usr/bin/env bash
# The PostgreSQL server binaries the tests start throwaway clusters from (tests/support/postgres.ts)
# and the stores benchmark uses: Debian's `postgresql` package. Idempotent: present → nothing to do.
# Installs it with apt-get where it may (root, or sudo without a password); otherwise says how.
set -euo pipefail
say() { printf '[provision-postgres] %s\n' "$*"; }

if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  say "the PostgreSQL server is not installed and this user cannot install it:"
  say "run 'sudo apt-get install -y postgresql' (Debian/Ubuntu) and try again."
  exit 1
fi
say "installing Debian's postgresql package (the tests start their own clusters; no service is used)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || { say "apt-get ran but initdb is still missing"; exit 1; }
say "installed: $(ls -d /usr/lib/postgresql/*/bin)"
