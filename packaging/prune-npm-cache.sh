#!/bin/sh
# Deletes from an npm package cache (DENO_DIR/npm) the files no program of the image loads:
# type declarations and source maps (Deno runs without type checking), Markdown, tests, and
# the trees that packages loaded as ES modules ship for other module systems (viem's and ox's
# CommonJS builds and type trees, zod's TypeScript sources). Run by the Dockerfile in the same
# step as the install, so no layer keeps them. Usage: sh prune-npm-cache.sh <dir>
set -eu
dir="$1"
[ -d "$dir" ] || { echo "prune-npm-cache: no directory $dir" >&2; exit 1; }
before=$(du -sk "$dir" | cut -f1)
find "$dir" -type f \( -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \
  -o -name '*.md' \) -delete
for tree in viem/*/_cjs viem/*/_types ox/*/_cjs ox/*/_types zod/*/src bintrees/*/test; do
  for path in "$dir"/*/$tree; do
    [ -d "$path" ] && rm -rf "$path"
  done
done
after=$(du -sk "$dir" | cut -f1)
echo "prune-npm-cache: $((before / 1024)) MB -> $((after / 1024)) MB"
