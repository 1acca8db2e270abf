#!/usr/bin/env bash
# Backups of an edge service on PostgreSQL (`edge-service serve --database URL`), and restores
# from them: the recipes of docs/operating.md ("Backups and restores"), each run by
# tests/engine/restore.test.ts. pg_dump and pg_restore come with PostgreSQL's client package.
#
#   postgres.sh backup DATABASE_URL BACKUP_FILE       while the replicas serve
#   postgres.sh restore DATABASE_URL BACKUP_FILE      into the same database: every replica stopped
#   postgres.sh restore-new DATABASE_URL BACKUP_FILE  into a new, empty database (CREATE DATABASE)
#
# Run them as the role the replicas connect as (their URL), so that what a restore creates is
# that role's.
set -euo pipefail
usage() { sed -n '6,8p' "$0" >&2; exit 64; }
[ "$#" -eq 3 ] || usage
step=$1 url=$2 backup=$3
case "$step" in
  backup)
    # [snippet: pg-backup]
    umask 077 # the dump holds API key hashes and route secrets: for its owner only
    pg_dump --format=custom --file "$backup" "$url"
    # [/snippet]
    ;;
  restore)
    # [snippet: pg-restore-same]
    pg_restore --clean --if-exists --single-transaction --no-owner --dbname "$url" "$backup"
    # [/snippet]
    ;;
  restore-new)
    # [snippet: pg-restore-new]
    pg_restore --single-transaction --no-owner --dbname "$url" "$backup"
    # [/snippet]
    ;;
  *) usage ;;
esac
