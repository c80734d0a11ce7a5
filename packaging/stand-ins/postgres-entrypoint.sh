#!/bin/sh
# Entry point of the postgres stand-in (postgres.Dockerfile): on an empty PGDATA, creates the
# cluster with POSTGRES_USER / POSTGRES_PASSWORD (scram-sha-256 for every TCP client) and the
# database POSTGRES_DB, like the official image; then runs the server in the foreground.
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
if [ -z "${POSTGRES_PASSWORD:-}" ]; then
  echo "postgres stand-in: POSTGRES_PASSWORD is required" >&2
  exit 1
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 --encoding=UTF8 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/var/run/postgresql" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    createdb --host=/var/run/postgresql --username="$POSTGRES_USER" "$POSTGRES_DB"
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
  echo "postgres stand-in: cluster created (user $POSTGRES_USER, database $POSTGRES_DB)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/var/run/postgresql "$@"
