#!/bin/sh
# cli_bench_exchange: 'freescale bench exchange --check' on 2, 3 and 4 ranks
# with and without replicas, and its refusals (bad ids, bad group sizes),
# which must end the whole job with a message and no hang.
. "$(dirname "$0")/lib.sh"
need_mpirun
run() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" bench exchange "$@"; }
SMALL="--check --vocab 20000 --dim 16 --ids 3000 --zipf 1.1 --iters 3 --warmup 1"

for args in "2" "3" "4" "4 parallel.embedding_group=2" "4 parallel.embedding_group=1" \
    "3 embedding.optimizer=sgd" "4 embedding.optimizer=adam parallel.embedding_group=2"; do
    np=${args%% *}
    extra=
    [ "$args" != "$np" ] && extra=${args#* }
    # shellcheck disable=SC2086
    expect_ok run "$np" $SMALL $extra
    grep -q "check: first-step lookups exact; .*: PASS" "$T/out" ||
        fail "no passing check line for np=$np $extra: $(tail -n 3 "$T/out")"
    grep -q "ids/s" "$T/out" || fail "no figures for np=$np $extra"
done
# figures are there: stages, de-duplication, memory per rank
expect_ok run 2 --vocab 1000 --dim 8 --ids 500 --iters 2
for key in "de-duplication:" "  dedup" "  rows" "  update" "GB/s sent per rank" \
    "shard per rank" "rank 1: RSS"; do
    grep -qF -- "$key" "$T/out" || fail "bench output lacks '$key'"
done

expect_error "embedding table 'items': id 0 (token 0, requested by rank 2) is outside 1..1000" \
    run 3 --vocab 1000 --dim 4 --ids 10 --bad-id 0
expect_error "id 1001 (token 0, requested by rank 1)" run 2 --vocab 1000 --dim 4 --ids 10 --bad-id 1001
expect_error "parallel.embedding_group = 3 does not divide the 4 ranks" \
    run 4 --vocab 1000 --ids 10 parallel.embedding_group=3
expect_error "unknown key 'embedding_grp' in section [parallel]" \
    run 2 --vocab 1000 parallel.embedding_grp=1
expect_error "--zipf: -1 is out of range" run 2 --zipf -1
finish
