# shellcheck shell=bash
# bench/lib/stack_front.sh — the locklab instances and nginx in front.
#
# Instance i (from 0) listens on 127.0.0.1:8000+100*i and is named
# app-<port>, as in the seeds (8000, 8100, 8200); it also listens on the
# Unix socket .run/apps/app-<port>.sock, which is where nginx reaches it
# (app_sock; the ports serve the tests and --instances 1). Each is the
# build's locklab binary started detached, logging to
# .run/logs/app-<port>.log (appended, so the log of a crashed run survives
# the restart), and is ready when GET /health answers 200.
#
# An instance's "spec" — the binary, its modification time and its
# arguments — is kept in .run/apps/app-<port>.spec. `up` leaves a running
# instance alone unless its spec changed: a rebuilt binary or a changed
# topology (another Redis or ZooKeeper list) restarts it, since a process
# still running the old binary or talking to the old servers is never what
# the next benchmark means to measure.
#
# nginx's config is nginx/nginx.conf.in with its placeholders filled, in
# .run/nginx/nginx.conf. A running nginx whose config would change (the
# instance count changed) is tested and reloaded with SIGHUP, so the front
# port never goes away.

APP_BASE_PORT=$((8000 + STACK_OFFSET))
APP_PORT_STEP=100
NGINX_PORT=$((8080 + STACK_OFFSET))

# Connections, sized together (nginx/nginx.conf.in says why): an instance
# serves APP_CONNS at once; nginx keeps UPSTREAM_KEEPALIVE idle upstream
# connections in all and opens at most UPSTREAM_MAX_CONNS active ones to
# each instance, so the two never exceed APP_CONNS; past instances x
# UPSTREAM_MAX_CONNS purchases in flight nginx answers 503 itself. A
# connection costs an instance a few KiB and no thread (one event loop),
# so APP_CONNS is what the 20000 descriptors of a process allow, less its
# backends' and the loop's own: 15000 half-open clients still leave nginx
# its 1024 kept and room for new ones.
APP_CONNS=18432
UPSTREAM_KEEPALIVE=1024
UPSTREAM_MAX_CONNS=$((APP_CONNS - UPSTREAM_KEEPALIVE))

app_port() { printf '%d\n' $((APP_BASE_PORT + APP_PORT_STEP * $1)); }

# Where instance I listens: 127.0.0.1, or its namespace's address (--netns).
app_addr() {
    if ((TOPO_NETNS)); then
        printf '%s:%d\n' "$(net_app_ip "$1")" "$(app_port "$1")"
    else
        printf '127.0.0.1:%d\n' "$(app_port "$1")"
    fi
}
app_url() { printf 'http://%s\n' "$(app_addr "$1")"; }

# The server binary: $LOCKLAB_BUILD_DIR/locklab, the build dir relative to
# the repository unless absolute.
build_dir() {
    local dir=${LOCKLAB_BUILD_DIR:-build}
    [[ $dir == /* ]] || dir="$ROOT/$dir"
    printf '%s\n' "$dir"
}

locklab_bin() { printf '%s/locklab\n' "$(build_dir)"; }

# ensure_binary: build the server (incremental). An existing
# build folder keeps its own cache (e.g. a sanitizer build configured by
# hand); a new one is configured as a Release build.
ensure_binary() {
    local dir bin log="$RUN/logs/build.log"
    dir=$(build_dir)
    bin=$(locklab_bin)
    # LOCKLAB_STACK_BUILD=0: the binary as it is (the tests: ctest runs
    # what the build before it made, and calls `up` dozens of times).
    if [[ ${LOCKLAB_STACK_BUILD:-1} == 0 && -x $bin ]]; then
        return 0
    fi
    if [[ ! -f $ROOT/CMakeLists.txt ]]; then
        [[ -x $bin ]] && return 0
        die "no $bin and no CMakeLists.txt to build it (LOCKLAB_STACK_NO_APPS=1 starts the servers only)"
    fi
    # Always build: incremental, about a second when nothing changed, and a
    # benchmark of a stale binary is never what anyone means to measure.
    # Only the server: checking every target when nothing changed costs
    # four times the CPU, at each of the many `up` of a test run.
    [[ -x $bin ]] || say "building $bin (log: ${log#"$ROOT"/})"
    : >"$log"
    if [[ ! -f $dir/CMakeCache.txt ]]; then
        cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release >>"$log" 2>&1 ||
            { log_tail "$log" 30; die "cmake configure failed"; }
    fi
    cmake --build "$dir" -j2 --target locklab >>"$log" 2>&1 ||
        { log_tail "$log" 30; die "build failed"; }
    [[ -x $bin ]] || die "the build finished but made no $bin"
}

# ------------------------------------------------------------- instances

# app_sock PORT: the instance's Unix socket, or nothing when the path is
# too long for one (108 bytes with its NUL): nginx then proxies over TCP.
# On one machine a Unix socket costs nginx and the instance fewer µs a
# request than TCP over the loopback: measured through nginx with 64
# connections on the 2-core VM, 3 alternating pairs, mysql-update 10.8-
# 12.2k -> 12.2-13.1k sales/s (the instance's CPU a sale 50-59 -> 43-48 µs),
# mysql-for-update 6.1-6.3k -> 6.3-6.5k.
app_sock() {
    local path="$RUN/apps/app-$1.sock"
    ((${#path} <= 107)) && printf '%s\n' "$path"
    return 0
}

# app_args PORT: the instance's command line after the binary, one per line.
# The secrets (the MariaDB password, the admin token) are not among them:
# app_start passes them in the environment (see secret()).
# In a namespace (--netns) it listens on the namespace's address and reaches
# every backend over TCP at NET_HOST (stack_net.sh).
app_args() {
    local port=$1 i sock listen=127.0.0.1 host=127.0.0.1
    local -a db=(--mysql-socket "$(mysql_socket)")
    sock=$(app_sock "$port")
    if ((TOPO_NETNS)); then
        i=$(net_app_index "$port")
        listen=$(net_app_ip "$i") host=$NET_HOST db=()
    fi
    printf '%s\n' --listen "$listen" --port "$port" --name "app-$port" \
        --mysql-host "$host" --mysql-port "$MYSQL_PORT" "${db[@]}" \
        --mysql-user locklab --mysql-db locklab \
        --redis "$(redis_list "$TOPO_REDIS" "$host")" --zk "$(zk_list "$TOPO_ZK" "$host")" \
        --etcd "$(etcd_list "$TOPO_ETCD" "$host")" \
        --max-connections "$APP_CONNS"
    [[ -n $sock ]] && printf '%s\n' --unix "$sock"
    [[ -n $TOPO_THREADS ]] && printf '%s\n' --threads "$TOPO_THREADS"
    [[ -n $TOPO_LOCK_WAIT_MS ]] && printf '%s\n' --lock-wait-ms "$TOPO_LOCK_WAIT_MS"
    [[ -n $TOPO_MAX_WAIT_MS ]] && printf '%s\n' --max-wait-ms "$TOPO_MAX_WAIT_MS"
    [[ -n $TOPO_LEASE_MS ]] && printf '%s\n' --lease-ms "$TOPO_LEASE_MS"
    [[ -n $TOPO_ZK_SESSION_MS ]] && printf '%s\n' --zk-session-ms "$TOPO_ZK_SESSION_MS"
    [[ $TOPO_FAULTS == 1 ]] && printf '%s\n' --allow-faults
    [[ $TOPO_LEDGER == 1 ]] && printf '%s\n' --ledger
    [[ $TOPO_REDIS_REPLICA == 1 ]] && printf '%s\n' --redis-sentinel "$(replica_host):$SENTINEL_PORT"
    [[ $TOPO_READ_REPLICA == 1 ]] && printf '%s\n' --mysql-replica "$(mysql_replica_addr)"
    ((TOPO_GALERA == 0)) || galera_app_args "$port"     # after --mysql-*: they win
    ((TOPO_REDIS_CLUSTER)) && printf '%s\n' --redis-cluster "$(rcluster_list "$TOPO_REDIS_CLUSTER" "$host")"
    return 0
}

# The spec names the secrets by a digest, so new ones restart the instance.
app_spec() {
    local bin
    bin=$(locklab_bin)
    printf 'binary %s %s\n' "$bin" "$(stat -c %Y "$bin" 2>/dev/null || echo missing)"
    printf 'secrets %s\n' "$({ secret mysql-password; secret admin-token; } | sha256sum | cut -c1-16)"
    app_args "$1"
}

app_start() {
    local port=$1 name="app-$1" pid bin
    local -a args netns=()
    mapfile -t args < <(app_args "$port")
    bin=$(locklab_bin)
    if ((TOPO_NETNS)); then     # `ip netns exec` execs the server: same pid
        netns=(ip netns exec "$(net_app_ns "$(net_app_index "$port")")")
    else
        port_free_or_die "$port" "$name"
    fi
    mkdir -p "$RUN/apps"
    # The instance is configured by its command line (app_args) and the two
    # secrets, and by nothing the caller happens to export: the server
    # reads LOCKLAB_<OPTION> wherever its flag is not given (core/config.c),
    # and a caller that sourced .run/stack.env (a shell, bench/compare, the
    # tests' t_env) exports LOCKLAB_MYSQL_SOCKET, LOCKLAB_REDIS_SENTINEL …
    # of whatever stack wrote it. In a namespace app_args gives no
    # --mysql-socket, and an instance took MariaDB's Unix socket from the
    # caller's environment: its sales never crossed the --rtt wire, nor a
    # partition's cut (issue 51). So every LOCKLAB_ variable goes but
    # LOCKLAB_LOOP_WARN_MS, a debugging knob and no part of the topology.
    pid=$(cd "$ROOT" && warn=${LOCKLAB_LOOP_WARN_MS:-} && unset "${!LOCKLAB_@}" &&
        { [[ -z $warn ]] || export LOCKLAB_LOOP_WARN_MS=$warn; } &&
        LOCKLAB_MYSQL_PASSWORD=$(secret mysql-password) &&
        LOCKLAB_ADMIN_TOKEN=$(secret admin-token) &&
        export LOCKLAB_MYSQL_PASSWORD LOCKLAB_ADMIN_TOKEN &&
        spawn "$RUN/logs/$name.log" "${netns[@]}" "$bin" "${args[@]}")
    printf '%s\n' "$pid" >"$(pid_file "$name")"
    app_spec "$port" >"$RUN/apps/$name.spec"
}

# app_answers I: instance I answers GET /health on its port and, when it
# has one, on the Unix socket nginx reaches it by.
app_answers() {
    local sock code
    http_ok "$(app_url "$1")/health" || return 1
    sock=$(app_sock "$(app_port "$1")")
    [[ -n $sock ]] || return 0
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 --unix-socket "$sock" \
        http://locklab/health 2>/dev/null) || return 1
    [[ $code == 200 ]]
}

# apps_up N: instances 0..N-1 running the current spec, none beyond; those
# to restart stop together, then every one to start starts, then each is
# waited on. APPS_STARTED: how many it started (nginx_up reloads nginx then).
APPS_STARTED=0
apps_up() {
    local n=$1 i port name pid file
    local -a start=() stop=()
    local -A wanted=()
    for ((i = 0; i < n; i++)); do
        port=$(app_port "$i")
        name="app-$port"
        wanted[$name]=1
        svc_same "$name" && continue    # as the last `up` left it
        if pid=$(svc_pid "$name"); then
            if [[ -r $RUN/apps/$name.spec && $(<"$RUN/apps/$name.spec") == "$(app_spec "$port")" ]]; then
                say "app:$port already running (pid $pid)"
                continue
            fi
            say "app:$port: binary or arguments changed, restarting"
            stop+=("$name")
        fi
        start+=("$port")
    done
    for file in "$RUN/pids"/app-*.pid; do
        [[ -e $file ]] || continue
        name=${file##*/}
        name=${name%.pid}
        [[ -n ${wanted[$name]:-} ]] || stop+=("$name")
    done
    ((${#stop[@]} == 0)) || svc_stop_many 10 TERM "${stop[@]}"
    for port in "${start[@]}"; do app_start "$port"; done
    for port in "${start[@]}"; do
        read -r pid <"$(pid_file "app-$port")"
        wait_for "app:$port" "$STACK_TIMEOUT" "$pid" "$RUN/logs/app-$port.log" \
            app_answers "$(((port - APP_BASE_PORT) / APP_PORT_STEP))"
        say "app:$port up (pid $pid)"
    done
    APPS_STARTED=${#start[@]}
}

# ------------------------------------------------------------------ nginx

# nginx_render N: nginx/nginx.conf.in with the placeholders filled.
# Comment lines are copied as they are (they mention the placeholders).
nginx_render() {
    local n=$1 i line sock addr upstreams="" class_apps="" user_line="" nofile pidfile
    local prefix="$RUN/nginx"
    for ((i = 0; i < n; i++)); do
        sock=$(app_sock "$(app_port "$i")")
        addr=${sock:+unix:}${sock:-127.0.0.1:$(app_port "$i")}
        upstreams+="        server $addr max_conns=$UPSTREAM_MAX_CONNS;"$'\n'
        # The class page's read of instance i's counters, and only those.
        class_apps+="        location = /class/app/$i/stats {"$'\n'
        class_apps+="            proxy_pass http://$addr${sock:+:}/stats;"$'\n'
        class_apps+="            add_header Cache-Control no-store always;"$'\n'
        class_apps+="        }"$'\n'
    done
    upstreams=${upstreams%$'\n'}
    class_apps=${class_apps%$'\n'}
    nofile=$(ulimit -Hn)        # what nginx may raise its workers' limit to
    [[ $nofile == unlimited ]] || ((nofile > 32768)) && nofile=32768
    ((EUID == 0)) && user_line="user $(id -un) $(id -gn);"
    pidfile=$(pid_file nginx)   # once: a replacement is expanded at every line
    # bash 5.2 would read & in a replacement as "the match".
    shopt -u patsub_replacement 2>/dev/null || true
    while IFS= read -r line || [[ -n $line ]]; do
        if [[ $line =~ ^[[:space:]]*# ]]; then
            printf '%s\n' "$line"
            continue
        fi
        line=${line//@PREFIX@/$prefix}
        line=${line//@PIDFILE@/$pidfile}
        line=${line//@LISTEN@/127.0.0.1:$NGINX_PORT}
        line=${line//@USER_LINE@/$user_line}
        line=${line//@UPSTREAMS@/$upstreams}
        line=${line//@NOFILE@/$nofile}
        line=${line//@UPSTREAM_KEEPALIVE@/$UPSTREAM_KEEPALIVE}
        line=${line//@FRONT_CONNS@/$((n * UPSTREAM_MAX_CONNS))}
        line=${line//@WEB@/$ROOT/web}
        line=${line//@CLASS_STATE@/$RUN/class/state.json}
        line=${line//@INSTANCES@/$n}
        line=${line//@CLASS_APPS@/$class_apps}
        [[ $line =~ @[A-Z_]+@ ]] && die "nginx/nginx.conf.in: unknown placeholder ${BASH_REMATCH[0]}"
        printf '%s\n' "$line"
    done <"$ROOT/nginx/nginx.conf.in"
}

nginx_cmd() { nginx -p "$RUN/nginx/" -c nginx.conf "$@"; }

nginx_test() {
    local out
    out=$(nginx_cmd -t -q 2>&1) || { printf '%s\n' "$out" >&2; die "nginx rejects .run/nginx/nginx.conf"; }
}

# nginx_forwards N: GET /health through nginx reaches each of the N
# instances (round robin: 2N requests on one connection see them all, unless
# nginx takes one for dead).
nginx_forwards() {
    local n=$1 i
    local -a urls=()
    for ((i = 0; i < 2 * n; i++)); do urls+=("http://127.0.0.1:$NGINX_PORT/health"); done
    (($(curl -s --max-time 5 "${urls[@]}" 2>/dev/null |
        jq -r 'select(.status == "ok") | .instance' 2>/dev/null | sort -u | wc -l) == n))
}

# nginx_up N: nginx running the config for N instances, and forwarding to
# each. A running nginx is reloaded (SIGHUP: new workers, the old ones
# finish what they serve) when its config changed, and also when this `up`
# started an instance: a worker takes an instance that refused it a
# connection (stopped, restarting) for dead during fail_timeout (10 s,
# nginx/nginx.conf.in) and answers 502 "no live upstreams" when it takes
# them all for dead; new workers start with none taken for dead.
# nginx_workers PID: the worker pids of master PID, on one line.
nginx_workers() { cat /proc/"$1"/task/*/children 2>/dev/null | xargs; }

# nginx_new_workers PID OLD: PID has workers, and none of the list OLD.
nginx_new_workers() {
    local now w
    now=$(nginx_workers "$1")
    [[ -n $now ]] || return 1
    for w in $2; do [[ " $now " == *" $w "* ]] && return 1; done
    return 0
}

nginx_up() {
    local n=$1 dir="$RUN/nginx" pid old i
    mkdir -p "$dir/logs" "$dir/tmp"
    if svc_same nginx && ((APPS_STARTED == 0)); then
        wait_for "nginx" "$STACK_TIMEOUT" - "$dir/logs/error.log" nginx_forwards "$n"
        return 0
    fi
    nginx_render "$n" >"$dir/nginx.conf.new"
    if pid=$(svc_pid nginx); then
        if cmp -s "$dir/nginx.conf.new" "$dir/nginx.conf" && ((APPS_STARTED == 0)); then
            rm -f "$dir/nginx.conf.new"
            wait_for "nginx" "$STACK_TIMEOUT" "$pid" "$dir/logs/error.log" nginx_forwards "$n"
            say "nginx already running (pid $pid)"
            return 0
        fi
        mv "$dir/nginx.conf.new" "$dir/nginx.conf"
        nginx_test
        old=$(nginx_workers "$pid")
        kill -HUP "$pid"
        # The old workers close their listeners at once and leave when what
        # they serve is done; a purchase still in flight may keep one longer.
        for ((i = 0; i < 50; i++)); do
            nginx_new_workers "$pid" "$old" && break
            sleep 0.1
        done
        wait_for "nginx" "$STACK_TIMEOUT" "$pid" "$dir/logs/error.log" nginx_forwards "$n"
        say "nginx reloaded on 127.0.0.1:$NGINX_PORT with $n upstream(s)"
        return 0
    fi
    port_free_or_die "$NGINX_PORT" nginx
    mv "$dir/nginx.conf.new" "$dir/nginx.conf"
    rm -f "$(pid_file nginx)"
    nginx_test
    nginx_cmd 2>>"$dir/logs/error.log" 9>&- || { log_tail "$dir/logs/error.log"; die "nginx failed to start"; }
    wait_for "nginx" "$STACK_TIMEOUT" - "$dir/logs/error.log" svc_running nginx
    wait_for "nginx" "$STACK_TIMEOUT" - "$dir/logs/error.log" nginx_forwards "$n"
    say "nginx up on 127.0.0.1:$NGINX_PORT -> $n instance(s) (pid $(svc_pid nginx))"
}
