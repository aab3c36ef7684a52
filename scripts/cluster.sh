#!/bin/sh
# cluster.sh: a small cluster on this machine, for testing what crosses a
# network (doc/cluster.md). Each node is a network namespace with a UTS
# namespace of its own (hostname nodeI), joined by a veth pair to a bridge
# in a switch namespace; addresses in 198.18.0.0/24 (RFC 2544's range for
# benchmarking interconnects), used only inside these namespaces; each
# link optionally rate-limited by tbf. Processes of one node share memory
# with the machine (one mount namespace): Open MPI uses shared memory
# within a node and TCP between nodes, as on a cluster. As root.
#
#   scripts/cluster.sh up N [--rate R]   N nodes (1..16); R: tc's rate
#                                        (e.g. 100mbit) for every link, each
#                                        way; replaces a cluster already up
#   scripts/cluster.sh rate NODE R|off   one node's link (a straggler)
#   scripts/cluster.sh link NODE down|up take a node's link down (a fault)
#   scripts/cluster.sh down              every node gone, its processes killed
#   scripts/cluster.sh status            the nodes, their addresses and rates
#   scripts/cluster.sh hostfile [SLOTS]  a hostfile for mpirun (addresses)
#   scripts/cluster.sh run NODE CMD...   CMD inside node NODE (1..N)
#   scripts/cluster.sh mpirun ARGS...    Open MPI's mpirun inside node 1 with
#                                        this script as its launcher agent, so
#                                        that mpirun --hostfile starts its
#                                        daemons inside the nodes
#   scripts/cluster.sh agent HOST CMD    (the launcher agent mpirun calls)
#
# FREESCALE_CLUSTER_DIR (default /run/freescale-cluster) keeps the state.
# Every argument is checked before a running cluster is touched. The tests
# that need a cluster take turns through a lock file (flock(1); LOCK
# below, doc/cluster.md): while a test holds it, up and down refuse unless
# FREESCALE_CLUSTER_LOCKED=1 (set for the test that holds it).
set -eu
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
STATE=${FREESCALE_CLUSTER_DIR:-/run/freescale-cluster}
NET=198.18.0
SW=fs-sw
LOCK=${FREESCALE_CLUSTER_LOCK:-/run/lock/freescale-cluster.lock}
[ -d "${LOCK%/*}" ] || LOCK=/tmp/freescale-cluster.lock

die() { echo "cluster: $*" >&2; exit 1; }
nodes() { cat "$STATE/nodes" 2>/dev/null || echo 0; }
addr() { echo "$NET.$((10 + $1))"; }
node_of() { # ADDRESS|nodeI|I -> I
    case $1 in
        "$NET".*) echo $((${1##*.} - 10)) ;;
        node*) echo "${1#node}" ;;
        *) echo "$1" ;;
    esac
}
check_node() {
    n=$(nodes)
    case $1 in '' | *[!0-9]*) die "node '$1': expected 1..$n" ;; esac
    [ "$1" -ge 1 ] && [ "$1" -le "$n" ] || die "node $1: the cluster has nodes 1..$n"
}
enter() { # I CMD...: run CMD in node I's network and UTS namespaces
    i=$1
    shift
    exec nsenter --net="/run/netns/fs-node$i" --uts="$STATE/uts/node$i" -- "$@"
}
check_rate() { # R|off: a rate tc accepts (a number, then bit/bps with an SI or IEC prefix)
    echo "$1" | grep -Eqi '^(off|[0-9]+(\.[0-9]+)?([kmgt]i?)?(bit|bps)?)$' ||
        die "rate '$1': expected off or a rate such as 100mbit, 2mbit, 500kbit (tc's units)"
}
check_free() { # up/down leave a cluster that a test holds alone (the lock)
    [ "${FREESCALE_CLUSTER_LOCKED:-}" = 1 ] && return 0
    command -v flock >/dev/null 2>&1 || return 0
    touch "$LOCK" 2>/dev/null || return 0
    flock -n "$LOCK" true ||
        die "a test holds the cluster (lock $LOCK: $(fuser "$LOCK" 2>/dev/null | tr -s ' ' || true)); wait for it to end"
}
set_rate() { # I R|off: tbf on both ends of node I's link
    for end in "fs-node$1 eth0" "$SW fss$1"; do
        set -- "$1" "$2" $end
        tc -n "$3" qdisc del dev "$4" root 2>/dev/null || true
        [ "$2" = off ] && continue
        # burst: at least one MTU; latency bounds the queue
        tc -n "$3" qdisc add dev "$4" root tbf rate "$2" burst 64kb latency 200ms ||
            die "tc tbf rate $2 on $3/$4 refused"
    done
    echo "$2" > "$STATE/rate.node$1"
}

down() { # (sh has no local variables: dn, di are down's own)
    dn=$(nodes)
    di=1
    while [ "$di" -le "$dn" ] || ip netns list 2>/dev/null | grep -q "^fs-node$di\b"; do
        i=$di
        if ip netns list | grep -q "^fs-node$i\b"; then
            ip netns pids "fs-node$i" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
            ip netns del "fs-node$i" 2>/dev/null || true
        fi
        if [ -e "$STATE/uts/node$i" ]; then
            umount "$STATE/uts/node$i" 2>/dev/null || true
            rm -f "$STATE/uts/node$i"
        fi
        di=$((di + 1))
    done
    if ip netns list 2>/dev/null | grep -q "^$SW\b"; then ip netns del "$SW"; fi
    umount "$STATE/uts" 2>/dev/null || true
    rm -rf "$STATE"
}

up() {
    n=${1:-}
    case $n in '' | *[!0-9]*) die "up N: N nodes (1..16)" ;; esac
    [ "$n" -ge 1 ] && [ "$n" -le 16 ] || die "up $n: 1..16 nodes"
    rate=off
    if [ "${2:-}" = --rate ]; then
        [ $# -ge 3 ] || die "up N --rate R: --rate needs a rate, e.g. 100mbit"
        rate=$3
        [ $# -le 3 ] || die "up N [--rate R]: unexpected '$4'"
    elif [ $# -gt 1 ]; then
        die "up N [--rate R]: unexpected '$2'"
    fi
    check_rate "$rate"
    [ "$(id -u)" -eq 0 ] || die "needs root (network namespaces)"
    command -v tc >/dev/null 2>&1 || [ "$rate" = off ] || die "--rate needs tc (iproute2)"
    check_free
    # every argument is good: only now the old cluster goes
    down
    mkdir -p "$STATE/uts"
    # a private mount for the UTS namespaces' handles
    mount --bind "$STATE/uts" "$STATE/uts"
    mount --make-private "$STATE/uts"
    echo "$n" > "$STATE/nodes"
    ip netns add "$SW" || die "ip netns add refused (no network namespaces here?)"
    ip -n "$SW" link set lo up
    ip -n "$SW" link add br0 type bridge
    ip -n "$SW" link set br0 up
    i=1
    while [ "$i" -le "$n" ]; do
        ip netns add "fs-node$i"
        ip link add "fsn$i" type veth peer name "fss$i"
        ip link set "fsn$i" netns "fs-node$i"
        ip link set "fss$i" netns "$SW"
        ip -n "fs-node$i" link set "fsn$i" name eth0
        ip -n "fs-node$i" addr add "$(addr "$i")/24" dev eth0
        ip -n "fs-node$i" link set lo up
        ip -n "fs-node$i" link set eth0 up
        ip -n "$SW" link set "fss$i" master br0
        ip -n "$SW" link set "fss$i" up
        touch "$STATE/uts/node$i"
        unshare --uts="$STATE/uts/node$i" hostname "node$i"
        set_rate "$i" "$rate"
        i=$((i + 1))
    done
    hostfile > "$STATE/hostfile"
    status
}

status() {
    n=$(nodes)
    [ "$n" -gt 0 ] || { echo "cluster: no nodes up"; return 0; }
    i=1
    while [ "$i" -le "$n" ]; do
        st=$(ip -n "fs-node$i" -br link show eth0 2>/dev/null | awk '{print $2}')
        echo "node$i $(addr "$i") link ${st:-missing} rate $(cat "$STATE/rate.node$i" 2>/dev/null || echo off)"
        i=$((i + 1))
    done
    echo "hostfile: $STATE/hostfile"
}

hostfile() {
    n=$(nodes)
    i=1
    while [ "$i" -le "$n" ]; do
        echo "$(addr "$i") slots=${1:-2}"
        i=$((i + 1))
    done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    up) up "$@" ;;
    down) check_free; down; echo "cluster: down" ;;
    status) status ;;
    hostfile)
        case ${1:-2} in '' | *[!0-9]* | 0) die "hostfile [SLOTS]: SLOTS a count >= 1" ;; esac
        hostfile "${1:-2}"
        ;;
    rate)
        check_node "${1:-}"
        [ -n "${2:-}" ] || die "rate NODE R|off"
        check_rate "$2"
        set_rate "$1" "$2"
        ;;
    link)
        check_node "${1:-}"
        case ${2:-} in up | down) ;; *) die "link NODE up|down" ;; esac
        ip -n "$SW" link set "fss$1" "$2"
        ;;
    run) check_node "${1:-}"; i=$1; shift; enter "$i" "$@" ;;
    mpirun)
        [ "$(nodes)" -gt 0 ] || die "no nodes up (scripts/cluster.sh up N)"
        # TCP between nodes on the cluster's interface; the agent starts
        # orted; TCP keepalives on the daemons' connections, so that a node
        # whose link is gone is noticed in ~5 s (Open MPI's default, 300 s of
        # silence then 9 probes 20 s apart, leaves mpirun waiting for it
        # after the job's ranks are gone)
        enter 1 "${MPIRUN:-mpirun}" --mca plm_rsh_agent "$SELF agent" --mca plm_rsh_no_tree_spawn 1 \
            --mca oob_tcp_if_include "$NET.0/24" --mca btl_tcp_if_include "$NET.0/24" \
            --mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 \
            --mca oob_tcp_keepalive_probes 3 "$@"
        ;;
    agent) # HOST CMD...: what mpirun's rsh launcher calls instead of ssh
        host=${1:?agent HOST CMD}
        shift
        i=$(node_of "$host")
        check_node "$i"
        enter "$i" sh -c "$*"
        ;;
    *) sed -n '2,30p' "$SELF" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
