#!/usr/bin/env bash
# The highly available PostgreSQL the failover test starts (deploy/postgres-ha/,
# tests/service/failover.test.ts): Debian's `patroni` (3.0) with `python3-etcd`, its client of
# etcd, and `etcd-server` (3.4). PostgreSQL's own server binaries come from provision-postgres.sh,
# HAProxy from provision-haproxy.sh. Idempotent: present → nothing to do. Installs them with
# apt-get where it may (root, or sudo without a password); otherwise says how. Only the binaries
# are used: the packages' own services are stopped and left disabled, so nothing listens on the
# machine's ports and no cluster is made under /var/lib.
#
# Exit 3 when they are missing and this machine cannot install them (no root nor password-less
# sudo, or no apt-get); CI (.ci/run) stops there.
#   --check        install nothing; exit 0 when present, 2 when missing but installable, 3 as above:
#                  the test asks this, and skips (saying why) only on 3.
#   --if-possible  `npm test`'s pretest: on 3, say so and exit 0 (that one test then skips, saying why).
set -euo pipefail
say() { printf '[provision-ha] %s\n' "$*"; }

PACKAGES=(patroni python3-etcd etcd-server)
missing() {
  local out=()
  command -v patroni >/dev/null || out+=(patroni)
  # Debian's python3 (Patroni's), not another one first on PATH.
  /usr/bin/python3 -c 'import etcd' 2>/dev/null || out+=(python3-etcd)
  command -v etcd >/dev/null || out+=(etcd-server)
  echo "${out[*]}"
}

mode=${1:-install}
case "$mode" in
  install | --check | --if-possible) ;;
  *) say "usage: provision-ha.sh [--check | --if-possible]"; exit 64 ;;
esac
cannot() {
  for line in "$@"; do say "$line"; done
  if [ "$mode" = --if-possible ]; then
    say "tests/service/failover.test.ts will be skipped (it says so)."
    exit 0
  fi
  exit 3
}

todo=$(missing)
if [ -z "$todo" ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null; then
  cannot "Missing: $todo, and this machine has no apt-get: install Patroni 3.0 (with its etcd client)" \
    "and etcd 3.4 with the system's package manager (the failover test needs them)."
fi
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  cannot "Missing: $todo, and this user cannot install them:" \
    "run 'sudo apt-get install -y ${PACKAGES[*]}' (Debian/Ubuntu) and try again."
fi
if [ "$mode" = --check ]; then
  say "Missing: $todo; 'bash scripts/provision-ha.sh' installs them (Debian's ${PACKAGES[*]})."
  exit 2
fi
say "installing Debian's ${PACKAGES[*]} (the failover test starts its own; no service is used)"
# Another apt-get on the machine (a second provisioning) holds the lock for a while: wait for it.
apt=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
"${sudo[@]}" "${apt[@]}" update -qq
# policy-rc.d 101: the packages' postinst must start no etcd nor Patroni of their own (on a machine
# with an init system etcd would bind 2379 and 2380 and make a member under /var/lib/etcd).
policy=/usr/sbin/policy-rc.d
own_policy=false
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
  "${sudo[@]}" chmod 755 "$policy"
  own_policy=true
fi
status=0
"${sudo[@]}" "${apt[@]}" install -y -qq "${PACKAGES[@]}" >/dev/null || status=$?
if $own_policy; then "${sudo[@]}" rm -f "$policy"; fi
[ "$status" = 0 ] || { say "apt-get install ${PACKAGES[*]} failed (exit $status)"; exit "$status"; }
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
  "${sudo[@]}" systemctl disable --now etcd patroni >/dev/null 2>&1 || true
fi
todo=$(missing)
[ -z "$todo" ] || { say "apt-get ran but $todo is still missing"; exit 1; }
say "installed: $(patroni --version 2>&1 | head -1), $(etcd --version 2>&1 | head -1)"
