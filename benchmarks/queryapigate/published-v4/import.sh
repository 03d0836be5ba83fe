#!/bin/sh
# The reference QueryAPIGate page (v4) imported with `perfpages import` alone, one run per table
# shape; docs/performance/queryapigate-published/v1.md pins them (their ids carry the import date).
# Run from the repository root:
#   sh benchmarks/queryapigate/published-v4/import.sh [--results DIR]
set -e
dir=benchmarks/queryapigate/published-v4
title="Performance, v4: what 0.43 changed on PostgreSQL (QueryAPIGate)"
who="QueryAPIGate's maintainers: a copy of their performance page, without its address"
day=2026-12-04
method="v3's method: each cell the median of 5 interleaved rounds with its min-max range; a difference counts only when the ranges don't overlap. One laptop (Intel i7-12700H, AC power, performance profile), the gateway on CPUs 0-7, PostgreSQL 16 on 8-11, the load generator on 12-19; one session, 2026-10-26 22:00 to 2026-10-27 00:28."
perfpages() { command ${PERFPAGES:-perfpages} "$@"; }
run() {
    file=$1; shift
    perfpages import "$dir/$file" --title "$title" --unpublished "$who" --date "$day" \
        --method "$method" "$@"
}
cache="0.43 + cache:QUERYAPIGATE_METADATA_CACHE_TTL=5"
run calls.csv --suite qag-v4-calls --rounds 5 --rule ranges \
    --build "v0.42.0=git commit 647ab6f" \
    --build "0.43=git commit fe603c0: main with everything 0.43 ships but its version number" \
    --build "0.43 + cache=git commit fe603c0, with the metadata cache" --env "$cache" "$@"
run threads.csv --suite qag-v4-threads --rounds 5 --rule ranges \
    --build "0.43=git commit fe603c0: main with everything 0.43 ships but its version number" "$@"
run load.csv --suite qag-v4-load \
    --build "0.43=git commit fe603c0: main with everything 0.43 ships but its version number" \
    --build "0.43 + cache=git commit fe603c0, with the metadata cache" --env "$cache" "$@"
run cold.csv --suite qag-v4-cold-path \
    --build "0.43=git commit fe603c0: main with everything 0.43 ships but its version number" "$@"
run trips.csv --suite qag-v4-round-trips \
    --build "v0.42.0=git commit 647ab6f" \
    --build "0.43=git commit fe603c0: main with everything 0.43 ships but its version number" \
    --build "0.43 + cache=git commit fe603c0, with the metadata cache" --env "$cache" "$@"
run cpu.csv --suite qag-v4-cpu \
    --build "0.43=git commit fe603c0: main with everything 0.43 ships but its version number" \
    --build "0.43 + cache=git commit fe603c0, with the metadata cache" --env "$cache" "$@"
