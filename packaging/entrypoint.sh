#!/bin/sh
# The container's entry point (Dockerfile: ENTRYPOINT; tini runs it as PID 1's child).
# The first argument selects the program, the rest are its flags:
#
#   docker run … net-consumer                 the indexer (the image's CMD)
#   docker run … net-consumer indexer --help
#   docker run … net-consumer daemon  [flags]
#   docker run … net-consumer devnet  [flags]
#
# Each is the `deno task` of the same name (deno.json), which forwards SIGTERM to it. Tasks
# that install tools at run time (test, bench, setup, demo) are not offered: the image
# already has everything, anvil included (NET_ANVIL_BIN).
set -eu

usage() {
  echo "Usage: <image> indexer|daemon|devnet [flags]   (add --help for a program's flags)"
}

service="${1:-indexer}"
[ "$#" -gt 0 ] && shift
case "$service" in
  indexer | daemon | devnet)
    exec deno task "$service" "$@"
    ;;
  -h | --help | help)
    usage
    ;;
  *)
    echo "net-consumer: unknown program \"$service\"; expected indexer, daemon or devnet" >&2
    usage >&2
    exit 64
    ;;
esac
