#!/usr/bin/env bash
# sqlite3, SQLite's command-line shell: the online backup of the SQLite store that the operator's
# manual gives (docs/operating.md, examples/backup-restore/sqlite.sh: `VACUUM INTO`, SQLite 3.27
# or newer), which tests/engine/restore.test.ts runs. Debian's `sqlite3` package. Idempotent:
# present → nothing to do. Installs it with apt-get where it may (root, or sudo without a
# password); otherwise says how.
set -euo pipefail
say() { printf '[provision-sqlite3] %s\n' "$*"; }

if command -v sqlite3 >/dev/null; then
  exit 0
fi
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  say "sqlite3 is not installed and this user cannot install it:"
  say "run 'sudo apt-get install -y sqlite3' (Debian/Ubuntu) and try again."
  exit 1
fi
say "installing Debian's sqlite3 package (the SQLite backup recipe's shell)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null
command -v sqlite3 >/dev/null || { say "apt-get ran but sqlite3 is still missing"; exit 1; }
say "installed: $(sqlite3 --version | cut -d' ' -f1)"
