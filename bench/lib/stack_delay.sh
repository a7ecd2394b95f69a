# shellcheck shell=bash
# bench/lib/stack_delay.sh — round trips between hosts: `bench/stack up
# --netns --rtt MS [--jitter MS] [--loss PCT]` (kept until `--rtt 0`, or
# `--no-netns`, which takes the instances back to the machine's loopback).
#
# In a datacenter an instance and its backends are different hosts, 0.1–1
# ms apart, and the backends of an ensemble are too. With --netns each
# instance already is a host of its own (stack_net.sh); this puts the
# distance between them. Every packet between an instance's namespace and a
# backend, and between two members of an ensemble, waits half the round
# trip on its way in to the host that receives it:
#
#   instance -> backend      the machine's INPUT, from the bridge, to
#                            MariaDB, Redis (servers, replica, Sentinel),
#                            ZooKeeper and etcd's client ports
#   backend -> instance      the instance namespace's INPUT, from those ports
#   member <-> member        the machine's INPUT on lo: ZooKeeper's quorum
#                            and election ports, etcd's peer ports, and the
#                            Redis replica's link to its master and the
#                            Sentinel's to both (with --netns they speak to
#                            each other at NET_HOST, which nothing else on lo
#                            uses)
#
# so a ZooKeeper write through a follower pays the client's round trip and
# the quorum's, as it would on five hosts. Nothing else is delayed: nginx
# reaches the instances over Unix sockets, and the tools on 127.0.0.1
# (ll-limits, redis-cli, the tests' checks) reach the backends directly.
#
# The kernel has no netem, so the wait is ll-delay's (bench/net/delay.c): the
# rules are iptables' NFQUEUE (`--queue-bypass`: with ll-delay gone, packets
# pass undelayed rather than vanish), in a chain of this stack's own
# (LL<X>RTT) in each namespace, jumped to from INPUT; ll-delay listens to
# the queue in every one of them and holds each packet RTT/2 after the
# kernel received it. --jitter MS spreads each direction uniformly over
# ±MS/2 (a round trip varies by ±MS at most) without reordering a flow.
# --loss PCT drops that share of the same packets, by nftables itself
# (numgen random, table inet ll<X>loss), before they are queued.
#
# `bench/stack rtt MS [--jitter MS] [--loss PCT]` changes these three on a
# running --netns stack and touches nothing else: a fraction of a second,
# where `up --rtt` looks at every server on its way (seconds to tens of
# seconds on a loaded machine); bench/compare --rtt and tests/rtt.sh use it.
#
# ll-delay runs as the service `delay` (pid file, log .run/logs/delay.log,
# SCHED_FIFO priority 1 so that the machine's run queue does not add to the
# delay); its counters, CPU time included, are in .run/delay/stats.json
# (bench/net/delay.c says what each means). `down` removes every rule and table
# this file added, in every namespace, and stops ll-delay.

DELAY_QUEUE=$((7700 + $(net_octet)))
DELAY_CHAIN="LL$(net_octet)RTT"
DELAY_LOSS_TABLE="ll$(net_octet)loss"
DELAY_DIR="$RUN/delay"

# delay_us MS: milliseconds (up to 3 decimals) as whole microseconds.
delay_us() {
    local whole=${1%%.*} frac=""
    [[ $1 == *.* ]] && frac=${1#*.}
    frac=${frac}000
    printf '%d\n' $((10#$whole * 1000 + 10#${frac:0:3}))
}

# delay_check_ms FLAG VALUE MAX_MS: a decimal number of ms in [0, MAX_MS].
delay_check_ms() {
    if ! [[ $2 =~ ^[0-9]{1,3}(\.[0-9]{1,3})?$ ]] || (($(delay_us "$2") > $3 * 1000)); then
        die "$1 wants milliseconds from 0 to $3 (e.g. 0.5), not '$2'"
    fi
}

# delay_check_loss PCT: a percentage from 0 to 50, up to 2 decimals.
delay_check_loss() {
    if ! [[ $1 =~ ^[0-9]{1,2}(\.[0-9]{1,2})?$ ]] || (($(delay_us "$1") > 50000)); then
        die "--loss wants a percentage from 0 to 50 (e.g. 0.5), not '$1'"
    fi
}

# delay_wanted: the topology asks for a delay or a loss.
delay_wanted() { [[ $(delay_us "$TOPO_RTT") != 0 || $(delay_us "$TOPO_LOSS") != 0 ]]; }

# delay_topology GIVEN: up's --rtt, --jitter and --loss (from the array
# named GIVEN) into the topology, checked. Without --netns there is no
# distance to set: values the last topology kept fall back to 0, values
# given now are refused.
delay_topology() {
    local -n opts=$1
    local flag
    [[ -n ${opts[--rtt]:-} ]] && TOPO_RTT=${opts[--rtt]}
    [[ -n ${opts[--jitter]:-} ]] && TOPO_JITTER=${opts[--jitter]}
    [[ -n ${opts[--loss]:-} ]] && TOPO_LOSS=${opts[--loss]}
    delay_check_ms --rtt "$TOPO_RTT" 100
    delay_check_ms --jitter "$TOPO_JITTER" 100
    delay_check_loss "$TOPO_LOSS"
    if ((TOPO_NETNS == 0)); then
        for flag in --rtt --jitter --loss; do
            [[ -z ${opts[$flag]:-} || $(delay_us "${opts[$flag]}") == 0 ]] ||
                die "$flag needs the instances on hosts of their own: add --netns"
        done
        TOPO_RTT=0 TOPO_JITTER=0 TOPO_LOSS=0
    fi
    (($(delay_us "$TOPO_JITTER") <= $(delay_us "$TOPO_RTT"))) ||
        die "--jitter ($TOPO_JITTER ms) may not exceed --rtt ($TOPO_RTT ms)"
    return 0
}

# The ports, as iptables' multiport and nft's sets want them (a:b, a-b).
delay_backend_ports() {
    printf '%s,%s:%s,%s,%s,%s:%s,%s:%s\n' "$MYSQL_PORT" \
        "$REDIS_BASE_PORT" $((REDIS_BASE_PORT + 15)) "$REDIS_REPLICA_PORT" "$SENTINEL_PORT" \
        "$ZK_CLIENT_BASE" $((ZK_CLIENT_BASE + 4)) "$ETCD_CLIENT_BASE" $((ETCD_CLIENT_BASE + 4))
}
delay_member_ports() {
    printf '%s:%s,%s:%s,%s:%s\n' "$ZK_QUORUM_BASE" $((ZK_QUORUM_BASE + 4)) \
        "$ZK_ELECTION_BASE" $((ZK_ELECTION_BASE + 4)) "$ETCD_PEER_BASE" $((ETCD_PEER_BASE + 4))
}
delay_repl_ports() { printf '%s,%s,%s\n' "$(redis_port 1)" "$REDIS_REPLICA_PORT" "$SENTINEL_PORT"; }
nft_ports() { tr ':' '-' <<<"$1"; }

delay_bin() { printf '%s/ll-delay\n' "$(build_dir)"; }

# What the queue itself adds to a pass, which each packet's wait is
# shortened by (--trim-us): the verdict's path back into the kernel (a
# netlink message, the queue's lookup, the re-injection) is not in the
# kernel's receive stamp the wait counts from. Measured on the reference
# VM: without it, a connect's least round trip at 0.2, 0.5 and 1 ms
# exceeded the base + RTT by 10-12 µs, i.e. 5-6 µs a pass.
DELAY_TRIM_US=${LOCKLAB_DELAY_TRIM_US:-5}

# delay_args N: ll-delay's command line for N instances, one per line.
delay_args() {
    local i
    printf '%s\n' --queue "$DELAY_QUEUE" --delay-us $(($(delay_us "$TOPO_RTT") / 2)) \
        --jitter-us "$(delay_us "$TOPO_JITTER")" --trim-us "$DELAY_TRIM_US" --rt-prio 1 \
        --stats "$DELAY_DIR/stats.json"
    for ((i = 0; i < $1; i++)); do printf '%s\n' --netns "$(net_app_ns "$i")"; done
}

# ------------------------------------------------------------------ rules

# delay_chain [NS]: our chain in the namespace NS (the machine's if none),
# empty, and INPUT's jump to it.
delay_chain() {
    local -a in=()
    [[ -n ${1:-} ]] && in=(ip netns exec "$1")
    "${in[@]}" iptables -w -N "$DELAY_CHAIN" 2>/dev/null || "${in[@]}" iptables -w -F "$DELAY_CHAIN" ||
        die "cannot make the iptables chain $DELAY_CHAIN${1:+ in $1}"
    "${in[@]}" iptables -w -C INPUT -j "$DELAY_CHAIN" 2>/dev/null ||
        "${in[@]}" iptables -w -I INPUT -j "$DELAY_CHAIN" || die "cannot jump to $DELAY_CHAIN${1:+ in $1}"
}

delay_queue_rules() {
    local n=$1 i ns
    local -a q=(-j NFQUEUE --queue-num "$DELAY_QUEUE" --queue-bypass)
    delay_chain
    if ! iptables -w -A "$DELAY_CHAIN" -i "$NET_BRIDGE" -d "$NET_HOST" -p tcp \
            -m multiport --dports "$(delay_backend_ports)" "${q[@]}" ||
        ! iptables -w -A "$DELAY_CHAIN" -i lo -p tcp -m multiport --ports "$(delay_member_ports)" "${q[@]}" ||
        ! iptables -w -A "$DELAY_CHAIN" -i lo -s "$NET_HOST" -d "$NET_HOST" -p tcp \
            -m multiport --ports "$(delay_repl_ports)" "${q[@]}"; then
        die "cannot add the delay's rules to $DELAY_CHAIN"
    fi
    for ((i = 0; i < n; i++)); do
        ns=$(net_app_ns "$i")
        delay_chain "$ns"
        ip netns exec "$ns" iptables -w -A "$DELAY_CHAIN" -i eth0 -s "$NET_HOST" -p tcp \
            -m multiport --sports "$(delay_backend_ports)" "${q[@]}" ||
            die "cannot add the delay's rule in $ns"
    done
}

# delay_loss_rules PCT: drop PCT % of the same packets (a table of its own).
delay_loss_rules() {
    local p b m r subnet
    p=$(($(delay_us "$1") / 10))                    # hundredths of a percent
    nft delete table inet "$DELAY_LOSS_TABLE" 2>/dev/null || true
    ((p > 0)) || return 0
    b=$(nft_ports "$(delay_backend_ports)") m=$(nft_ports "$(delay_member_ports)") r=$(delay_repl_ports)
    subnet="${NET_HOST%.*}.0/24"
    nft -f - <<EOF || die "cannot create the nftables table $DELAY_LOSS_TABLE"
table inet $DELAY_LOSS_TABLE {
    chain input {
        type filter hook input priority -10; policy accept;
        iifname "$NET_BRIDGE" ip daddr $NET_HOST tcp dport { $b } numgen random mod 10000 < $p drop
        iifname "lo" tcp dport { $m } numgen random mod 10000 < $p drop
        iifname "lo" tcp sport { $m } numgen random mod 10000 < $p drop
        iifname "lo" ip saddr $NET_HOST ip daddr $NET_HOST tcp dport { $r } numgen random mod 10000 < $p drop
        iifname "lo" ip saddr $NET_HOST ip daddr $NET_HOST tcp sport { $r } numgen random mod 10000 < $p drop
    }
    chain output {
        type filter hook output priority -10; policy accept;
        oifname "$NET_BRIDGE" ip daddr $subnet tcp sport { $b } numgen random mod 10000 < $p drop
    }
}
EOF
}

# delay_rules_down: every rule and table of ours, in every namespace left.
delay_rules_down() {
    local ns
    local -a in
    ((EUID == 0)) || return 0
    if command -v nft >/dev/null; then nft delete table inet "$DELAY_LOSS_TABLE" 2>/dev/null || true; fi
    command -v iptables >/dev/null || return 0
    for ns in "" $(ip netns list 2>/dev/null | awk -v p="ll$(net_octet)-app" 'index($1, p) == 1 {print $1}'); do
        in=()
        [[ -n $ns ]] && in=(ip netns exec "$ns")
        if "${in[@]}" iptables -w -n -L "$DELAY_CHAIN" >/dev/null 2>&1; then
            while "${in[@]}" iptables -w -D INPUT -j "$DELAY_CHAIN" 2>/dev/null; do :; done
            "${in[@]}" iptables -w -F "$DELAY_CHAIN"
            "${in[@]}" iptables -w -X "$DELAY_CHAIN"
        fi
    done
    return 0
}

# delay_rules_active: some rule or table of ours is there.
delay_rules_active() {
    ((EUID == 0)) || return 1
    { command -v iptables >/dev/null && iptables -w -n -L "$DELAY_CHAIN" >/dev/null 2>&1; } ||
        { command -v nft >/dev/null && nft list table inet "$DELAY_LOSS_TABLE" >/dev/null 2>&1; }
}

# ------------------------------------------------------------------ ll-delay

# delay_daemon_up N: ll-delay running with today's arguments (a changed
# RTT, jitter or instance count restarts it: a fraction of a second).
delay_daemon_up() {
    local n=$1 pid bin log="$RUN/logs/delay.log"
    local -a args
    mapfile -t args < <(delay_args "$n")
    mkdir -p "$DELAY_DIR"
    if pid=$(svc_pid delay) && [[ $(cat "$DELAY_DIR/args" 2>/dev/null) != "${args[*]}" ]]; then
        svc_stop delay 10
    fi
    if pid=$(svc_pid delay); then
        say "delay already running (pid $pid)"
        return 0
    fi
    bin=$(delay_bin)
    [[ -x $bin ]] || die "no $bin: build it (cmake --build $(build_dir)), it needs libnetfilter-queue-dev"
    rm -f "$DELAY_DIR/stats.json"
    pid=$(spawn "$log" "$bin" "${args[@]}")
    printf '%s\n' "$pid" >"$(pid_file delay)"
    printf '%s\n' "${args[*]}" >"$DELAY_DIR/args"
    # It writes its stats once it listens on every queue.
    wait_for delay 10 "$pid" "$log" test -s "$DELAY_DIR/stats.json"
}

# delay_up N: the delay and loss the topology asks for, between the N
# namespaced instances and the backends; none when it asks for none.
delay_up() {
    local n=$1
    if ! delay_wanted; then
        delay_down
        return 0
    fi
    ((TOPO_NETNS)) || die "--rtt and --loss need the instances on hosts of their own: --netns"
    if [[ $(delay_us "$TOPO_RTT") != 0 ]]; then
        delay_daemon_up "$n"
        delay_queue_rules "$n"
    else
        svc_running delay && svc_stop delay 10
        delay_rules_down
    fi
    delay_loss_rules "$TOPO_LOSS"
    say "round trip between hosts: ${TOPO_RTT} ms$( [[ $TOPO_JITTER != 0 ]] && echo " ±$TOPO_JITTER ms"), loss ${TOPO_LOSS} %"
}

# delay_down: no rule, no table, no ll-delay (rules first: with
# --queue-bypass nothing is lost either way, but nothing waits on a gone
# process's queue).
delay_down() {
    delay_rules_active && delay_rules_down
    if svc_running delay; then svc_stop delay 10; fi
    return 0
}

# cmd_rtt MS [--jitter MS] [--loss PCT]: `bench/stack rtt`. Jitter and loss
# not given stay as they were.
# shellcheck disable=SC2034 # delay_topology reads `given` by its name
cmd_rtt() {
    local -A given=()
    (($# >= 1)) || die "usage: bench/stack rtt MS [--jitter MS] [--loss PCT]"
    given[--rtt]=$1
    shift
    while (($#)); do
        case $1 in
            --jitter | --loss) (($# >= 2)) || die "rtt: $1 wants a value"; given[$1]=$2; shift 2 ;;
            *) die "rtt: unknown option '$1'" ;;
        esac
    done
    stack_lock
    topology_load
    if ((TOPO_NETNS == 0)) || ! net_active; then
        die "rtt: the instances are not in network namespaces (bench/stack up --netns first)"
    fi
    delay_topology given
    topology_save
    delay_up "$TOPO_INSTANCES"
    delay_wanted || say "no delay between hosts (loopback's own round trip)"
}
