# bench/mls_common.sh: what the ml-latest-small ranking benchmarks share
# (quality_rank.sh, stream_mls.sh), sourced with the caller's arguments
# after it sets NAME (its name for messages) and here (the source tree):
# [--seeds N] sets SEEDS to 1 .. N (default: $SEEDS, else "1 2 3"); [DIR]
# the folder of ratings.csv and movies.csv (default
# ../shared/data/ml-latest-small next to the tree; absent: a message and
# exit 0; with MLS_OPTIONAL set: the message, MLS_ABSENT=1 and on); FS
# the program ($FREESCALE, else ./freescale or the tree's); NP (2), ARGS;
# MPI as root and one BLAS thread; W a scratch folder removed at exit,
# holding mls-rank.h5 imported from DIR.
SEEDS=${SEEDS:-1 2 3}
if [ "${1:-}" = "--seeds" ]; then
    [ -n "${2:-}" ] && [ "$2" -ge 1 ] 2>/dev/null || { echo "$NAME: --seeds N (N >= 1)" >&2; exit 2; }
    SEEDS=$(seq 1 "$2")
    shift 2
fi
DIR=${1:-$here/../shared/data/ml-latest-small}
MLS_ABSENT=
if [ ! -f "$DIR/ratings.csv" ] || [ ! -f "$DIR/movies.csv" ]; then
    [ -n "${MLS_OPTIONAL:-}" ] || { echo "$NAME: skipped: no ratings.csv and movies.csv in $DIR"; exit 0; }
    echo "$NAME: no ratings.csv and movies.csv in $DIR: the ml-latest-small parts skipped"
    MLS_ABSENT=1
fi
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "$NAME: set FREESCALE to the program" >&2; exit 2; }
NP=${NP:-2}
ARGS=${ARGS:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-mls.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
[ -n "$MLS_ABSENT" ] || "$FS" data import --format movielens "$DIR/ratings.csv" \
    --items "$DIR/movies.csv" -o "$W/mls-rank.h5" > /dev/null
