#!/usr/bin/env bash
# HAProxy, the load balancer the rolling-restart test starts in front of PostgreSQL replicas with
# the documented configuration (deploy/haproxy.cfg, tests/service/rolling-restart.test.ts):
# Debian's `haproxy` package. Idempotent: present → nothing to do. Installs it with apt-get where
# it may (root, or sudo without a password); otherwise says how. Only the binary is used: the
# package's own service is stopped and left disabled, so nothing listens on the machine's ports.
#
# Exit 3 when it is missing and this machine cannot install it (no root nor password-less sudo,
# or no apt-get); CI (.ci/run) stops there.
#   --check        install nothing; exit 0 when present, 2 when missing but installable, 3 as above:
#                  the test asks this, and skips (saying why) only on 3.
#   --if-possible  `npm test`'s pretest: on 3, say so and exit 0 (that one test then skips, saying why).
set -euo pipefail
say() { printf '[provision-haproxy] %s\n' "$*"; }

found() { command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ]; }

mode=${1:-install}
case "$mode" in
  install | --check | --if-possible) ;;
  *) say "usage: provision-haproxy.sh [--check | --if-possible]"; exit 64 ;;
esac
cannot() {
  for line in "$@"; do say "$line"; done
  if [ "$mode" = --if-possible ]; then
    say "tests/service/rolling-restart.test.ts will be skipped (it says so)."
    exit 0
  fi
  exit 3
}

if found; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  cannot "HAProxy is not installed and this machine has no apt-get: install HAProxy 2.6 or newer" \
    "with the system's package manager (the rolling-restart test needs it)."
fi
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  cannot "HAProxy is not installed and this user cannot install it:" \
    "run 'sudo apt-get install -y haproxy' (Debian/Ubuntu) and try again."
fi
if [ "$mode" = --check ]; then
  say "HAProxy is not installed; 'bash scripts/provision-haproxy.sh' installs it (Debian's haproxy)."
  exit 2
fi
say "installing Debian's haproxy package (the rolling-restart test starts its own; no service is used)"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# policy-rc.d 101: the package's postinst must not start its own haproxy (on a machine with an
# init system it would bind port 80 with the packaged example configuration).
policy=/usr/sbin/policy-rc.d
own_policy=false
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 755 "$policy"
  own_policy=true
fi
status=0
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null || status=$?
if $own_policy; then "${sudo[@]}" rm -f "$policy"; fi
[ "$status" = 0 ] || { say "apt-get install haproxy failed (exit $status)"; exit "$status"; }
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  "${sudo[@]}" systemctl disable --now haproxy >/dev/null 2>&1 || true
fi
found || { say "apt-get ran but haproxy is still missing"; exit 1; }
say "installed: $( (command -v haproxy || echo /usr/sbin/haproxy) | head -1) ($(/usr/sbin/haproxy -v 2>/dev/null | head -1))"
