# shellcheck shell=bash
# bench/lib/stack_net.sh — instances in network namespaces, so that one of
# them can really be cut off from one backend (bench/fault partition).
#
# `bench/stack up --netns` (root only; kept until `up --no-netns`) runs each
# instance in a network namespace of its own, joined to the machine by a
# veth pair on a bridge that exists on this machine only:
#
#   bridge      ll<X>br                       NET_HOST = 10.77.X.1/24
#   instance i  netns ll<X>-app<port>, eth0   10.77.X.(10+i)/24
#               (its veth's other end, ll<X>v<i>, on the bridge)
#
# X is the stack's own subnet (net_octet), so two checkouts with different
# LOCKLAB_STACK_OFFSETs get two bridges. In this mode the backends listen on
# NET_HOST as well as on 127.0.0.1, and the instances reach MariaDB, Redis
# and ZooKeeper over TCP at NET_HOST (not through MariaDB's Unix socket: a
# cut must be able to stop it); nginx still reaches each instance on its
# Unix socket, which namespaces do not divide, and the instances' own ports
# listen on their namespace's address (LOCKLAB_INSTANCES says which).
#
# A cut is two nftables rules in the machine's own namespace, in table
# `inet locklab<X>`: packets from the instance to the backend's port are
# dropped on input, and packets from that port to the instance on output,
# silently, as a broken network drops them; TCP retransmits into the void
# until the rules go and the connection resumes, or a timeout ends it. No
# other instance, and no tool on 127.0.0.1, notices. ZooKeeper binds one
# client address only, so in this mode it binds them all and the same table
# drops what reaches its ports on any interface but lo and the bridge. The
# bridge routes nowhere: nothing outside the machine reaches it.

NET_TABLE="locklab$((STACK_OFFSET / 100 % 200))"

# net_octet: this stack's X in 10.77.X.0/24 (20..219).
net_octet() { printf '%d\n' $((STACK_OFFSET / 100 % 200 + 20)); }

NET_HOST="10.77.$(net_octet).1"
NET_BRIDGE="ll$(net_octet)br"

net_app_ip() { printf '10.77.%d.%d\n' "$(net_octet)" $((10 + $1)); }
net_app_ns() { printf 'll%d-app%d\n' "$(net_octet)" "$(app_port "$1")"; }
net_app_veth() { printf 'll%dv%d\n' "$(net_octet)" "$1"; }

# The index i of the instance on PORT.
net_app_index() { printf '%d\n' $((($1 - APP_BASE_PORT) / APP_PORT_STEP)); }

net_need_root() {
    ((EUID == 0)) || die "--netns needs root (network namespaces, veth pairs, nftables)"
    command -v nft >/dev/null || die "--netns needs nftables (bench/stack install)"
}

net_bridge_up() {
    if ! ip link show "$NET_BRIDGE" >/dev/null 2>&1; then
        ip link add "$NET_BRIDGE" type bridge || die "cannot create bridge $NET_BRIDGE"
        ip addr add "$NET_HOST/24" dev "$NET_BRIDGE"
    fi
    ip link set "$NET_BRIDGE" up
}

# net_table_up: the table the cuts go into, and ZooKeeper's guard.
net_table_up() {
    local zk_ports
    zk_ports="$ZK_CLIENT_BASE-$((ZK_CLIENT_BASE + 4))"
    nft list table inet "$NET_TABLE" >/dev/null 2>&1 && return 0
    nft -f - <<EOF || die "cannot create nftables table $NET_TABLE"
table inet $NET_TABLE {
    chain input {
        type filter hook input priority 0; policy accept;
        tcp dport $zk_ports iifname != { "lo", "$NET_BRIDGE" } drop
    }
    chain output {
        type filter hook output priority 0; policy accept;
    }
}
EOF
}

# net_app_up I: instance I's namespace and veth pair, idempotently.
net_app_up() {
    local i=$1 ns veth ip
    ns=$(net_app_ns "$i")
    veth=$(net_app_veth "$i")
    ip=$(net_app_ip "$i")
    if ! ip netns list | grep -qx "$ns\( (id: [0-9]*)\)\?"; then
        ip netns add "$ns" || die "cannot create network namespace $ns"
    fi
    if ! ip link show "$veth" >/dev/null 2>&1; then
        ip link add "$veth" type veth peer name "${veth}p" || die "cannot create veth $veth"
        ip link set "${veth}p" netns "$ns"
        ip netns exec "$ns" ip link set "${veth}p" name eth0
        ip netns exec "$ns" ip addr add "$ip/24" dev eth0
        ip link set "$veth" master "$NET_BRIDGE"
    fi
    ip link set "$veth" up
    ip netns exec "$ns" ip link set lo up
    ip netns exec "$ns" ip link set eth0 up
}

# net_up N: the bridge, the table and instances 0..N-1's namespaces.
net_up() {
    local n=$1 i
    net_need_root
    net_bridge_up
    net_table_up
    for ((i = 0; i < n; i++)); do net_app_up "$i"; done
    say "network namespaces up: bridge $NET_BRIDGE ($NET_HOST), $n instance(s)"
}

# net_down: everything net_up made, whatever instances it was made for.
net_down() {
    local ns link
    ((EUID == 0)) || return 0
    for ns in $(ip netns list 2>/dev/null | awk -v p="ll$(net_octet)-app" 'index($1, p) == 1 {print $1}'); do
        ip netns del "$ns"
    done
    # A namespace's veth goes with it, and its host end may vanish between
    # the listing and the `del`: a link already gone is no error, one left
    # over is.
    for link in $(net_links); do
        ip link del "$link" 2>/dev/null || ! ip link show "$link" >/dev/null 2>&1 ||
            die "cannot remove link $link"
    done
    if ip link show "$NET_BRIDGE" >/dev/null 2>&1; then ip link del "$NET_BRIDGE"; fi
    if command -v nft >/dev/null && nft list table inet "$NET_TABLE" >/dev/null 2>&1; then
        nft delete table inet "$NET_TABLE"
    fi
    return 0
}

# net_links: the host ends of our veth pairs that exist now.
net_links() {
    ip -o link show 2>/dev/null | awk -F': ' -v p="ll$(net_octet)v" \
        'index($2, p) == 1 {sub(/@.*/, "", $2); print $2}'
}

# net_active: the stack's namespaces exist (the topology may say otherwise
# after a crash; what exists is what `down` must remove).
net_active() { ip link show "$NET_BRIDGE" >/dev/null 2>&1; }

# ------------------------------------------------------------------ cuts

# net_cut I PORT...: instance I no longer reaches the backend on PORT (each
# rule is commented "cut app<port> <backend port>", which net_heal finds).
net_cut() {
    local i=$1 ip port tag
    shift
    ip=$(net_app_ip "$i")
    for port; do
        tag="cut app$(app_port "$i") $port"
        nft add rule inet "$NET_TABLE" input ip saddr "$ip" tcp dport "$port" drop \
            comment "\"$tag\"" || die "cannot add the cut $tag"
        nft add rule inet "$NET_TABLE" output ip daddr "$ip" tcp sport "$port" drop \
            comment "\"$tag\"" || die "cannot add the cut $tag"
    done
}

# net_heal [I]: delete the cuts of instance I, or all of them.
net_heal() {
    local match="cut app" chain handle
    [[ -n ${1:-} ]] && match="cut app$(app_port "$1") "
    for chain in input output; do
        nft -a list chain inet "$NET_TABLE" "$chain" 2>/dev/null |
            awk -v m="$match" 'index($0, "comment \"" m) && /# handle/ {print $NF}' |
            while read -r handle; do
                nft delete rule inet "$NET_TABLE" "$chain" handle "$handle"
            done
    done
}

# net_cuts: one line per cut in force, "app<port> <backend port>".
net_cuts() {
    nft list chain inet "$NET_TABLE" input 2>/dev/null |
        sed -n 's/.*comment "cut \(app[0-9]* [0-9]*\)".*/\1/p'
}
