#!/usr/bin/env bash
# After the edge service's store was restored from a backup: what the restore changed, every
# stack put back, and the check that all is clean. The recipe of docs/operating.md ("After a
# restore"), run by tests/engine/restore.test.ts.
#
#   after-restore.sh check STACKS_DIR      the fleet's drift and the objects no stack holds (read key)
#   after-restore.sh converge STACKS_DIR   `pulumi up --refresh` on every drifted stack (write key),
#                                          then what no stack holds, still
#
# STACKS_DIR holds a directory per Pulumi project (every stack of every project is checked). The
# keys: EDGE_READ_KEY (edge-service keys create ci-drift --scope read) and EDGE_WRITE_KEY, a key
# that may deploy. Backend and passphrase as for the pulumi CLI.
set -uo pipefail
usage() { sed -n '6,8p' "$0" >&2; exit 64; }
[ "$#" -eq 2 ] || usage
step=$1 stacks=$2
read_key=${EDGE_READ_KEY:?set EDGE_READ_KEY to a read key} write_key=${EDGE_WRITE_KEY:-}
case "$step" in
  check)
    # [snippet: after-restore-check]
    EDGE_API_KEY=$read_key npx pulumi-edge drift --projects-dir "$stacks" --unmanaged
    # [/snippet]
    ;;
  converge)
    : "${write_key:?set EDGE_WRITE_KEY to a key that may deploy}"
    # [snippet: after-restore-converge]
    EDGE_API_KEY=$write_key npx pulumi-edge drift --projects-dir "$stacks" --remediate --yes --unmanaged
    # [/snippet]
    ;;
  *) usage ;;
esac
