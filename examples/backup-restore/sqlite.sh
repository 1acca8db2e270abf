#!/usr/bin/env bash
# Backups of an edge service on SQLite (`edge-service serve --data DIR`), and restores from them:
# the recipes of docs/operating.md ("Backups and restores"), each run by tests/engine/restore.test.ts.
#
#   sqlite.sh backup DATA_DIR BACKUP_FILE          while the service serves (sqlite3 >= 3.27)
#   sqlite.sh backup-stopped DATA_DIR BACKUP_DIR   the service stopped: a copy of the directory
#   sqlite.sh restore DATA_DIR BACKUP_FILE         the service stopped; from a BACKUP_FILE
#   sqlite.sh restore-copy DATA_DIR BACKUP_DIR     the service stopped; from a stopped copy
#
# A restore moves the data directory aside first (DATA_DIR.before-restore-<time>): delete it once
# the restored service is checked. Then start the service again with the same --data and keys.
set -euo pipefail
usage() { sed -n '5,8p' "$0" >&2; exit 64; }
[ "$#" -eq 3 ] || usage
step=$1 data=$2 backup=$3
aside="$data.before-restore-$(date -u +%Y%m%dT%H%M%SZ)"
case "$step" in
  backup)
    # [snippet: sqlite-online-backup]
    umask 077 # the backup holds API key hashes and route secrets: for its owner only
    sqlite3 "$data/edge.db" ".timeout 10000" "VACUUM INTO '$backup'"
    sqlite3 "$backup" "PRAGMA quick_check" # prints: ok
    # [/snippet]
    ;;
  backup-stopped)
    # [snippet: sqlite-stopped-backup]
    cp -a "$data" "$backup" # every file: edge.db-wal holds committed changes too
    # [/snippet]
    ;;
  restore)
    # [snippet: sqlite-restore]
    mv "$data" "$aside" # kept until the restored service is checked
    mkdir -m 700 "$data"
    install -m 600 "$backup" "$data/edge.db"
    # [/snippet]
    ;;
  restore-copy)
    # [snippet: sqlite-restore-copy]
    mv "$data" "$aside"
    cp -a "$backup" "$data"
    # [/snippet]
    ;;
  *) usage ;;
esac
