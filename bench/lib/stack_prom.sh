# shellcheck shell=bash
# bench/lib/stack_prom.sh — Prometheus and the backends' exporters, for
# `bench/stack up --prometheus` (kept in .run/topology until --no-prometheus).
#
#   Prometheus        19090   .run/prometheus/ (prometheus.yml, data/),
#                             scraping every PROM_SCRAPE_S second:
#     job locklab       every instance's GET /metrics (app/metrics.h)
#     job mariadb       Debian's prometheus-mysqld-exporter on 19104, as the
#                       account locklab_exporter (PROCESS and SLAVE MONITOR
#                       only: status, variables, no rows), its password the
#                       stack's random secret in a 0600 my.cnf
#     job redis         Debian's prometheus-redis-exporter on 19121, one
#                       exporter for every Redis server (its /scrape?target=),
#                       with the Redis stock's counts ({stock:P}, {stock:P}:sold
#                       of every product in db_stock) as redis_key_value
#   ZooKeeper has no job: its Prometheus metrics provider (ZooKeeper's own
#   zookeeper-prometheus-metrics jar and the simpleclient jars under it) is
#   not in Debian, whose zookeeper package ships the provider's interface
#   only; docs/stack.md says what is there instead.
#
# All of it is Debian's binaries on 127.0.0.1, ports shifted by
# LOCKLAB_STACK_OFFSET like the rest, data under .run/prometheus. They run at
# nice PROM_NICE, session included (see backend_first): the observers take
# the CPU the sale leaves, as they would from a host of their own. `up`
# starts what is missing, rewrites the configuration and reloads Prometheus
# (SIGHUP) when the topology changed; `down` and --no-prometheus stop them.
# Sourced by bench/stack after stack_common.sh; functions only.

PROM_PORT=$((19090 + STACK_OFFSET))
MYSQLD_EXPORTER_PORT=$((19104 + STACK_OFFSET))
REDIS_EXPORTER_PORT=$((19121 + STACK_OFFSET))
PROM_SCRAPE_S=1
PROM_NICE=10
PROM_DIR=$RUN/prometheus

# The observers' services, in the order `down` stops them.
PROM_SERVICES=(prometheus exporter-mysql exporter-redis)

# prom_spawn NAME LOG CMD...: spawn CMD at nice PROM_NICE, its session too.
prom_spawn() {
    local name=$1 log=$2 pid
    shift 2
    pid=$(spawn "$log" nice -n "$PROM_NICE" "$@")
    printf '%s\n' "$pid" >"$(pid_file "$name")"
    printf '%s\n' "$pid"
}

prom_niced() { # prom_niced PID: the session PID leads yields to the others
    [[ -e /proc/$1/autogroup ]] && echo "$PROM_NICE" 2>/dev/null >"/proc/$1/autogroup"
    return 0
}

# ----------------------------------------------------------------- MariaDB's

# The exporter's account: it reads the server's status, never a row. Made
# (and its password renewed) at every up, like the application's.
prom_mysql_account() {
    local pw user="'locklab_exporter'@'127.0.0.1'"
    pw=$(secret exporter-password)
    mysql_root <<<"CREATE USER IF NOT EXISTS $user IDENTIFIED BY '$pw' WITH MAX_USER_CONNECTIONS 3;
        ALTER USER $user IDENTIFIED BY '$pw' WITH MAX_USER_CONNECTIONS 3;
        REVOKE ALL PRIVILEGES, GRANT OPTION FROM $user;
        GRANT PROCESS, SLAVE MONITOR ON *.* TO $user;" ||
        die "could not create MariaDB's account for the exporter"
    (
        umask 077
        printf '[client]\nuser=locklab_exporter\npassword=%s\nhost=127.0.0.1\nport=%s\n' \
            "$pw" "$MYSQL_PORT" >"$RUN/secrets/exporter.my.cnf"
    ) || die "cannot write .run/secrets/exporter.my.cnf"
}

mysqld_exporter_up() {
    local pid log="$RUN/logs/exporter-mysql.log"
    prom_mysql_account
    if pid=$(svc_pid exporter-mysql); then
        say "exporter-mysql already running (pid $pid)"
        return 0
    fi
    port_free_or_die "$MYSQLD_EXPORTER_PORT" exporter-mysql
    pid=$(prom_spawn exporter-mysql "$log" prometheus-mysqld-exporter \
        --config.my-cnf="$RUN/secrets/exporter.my.cnf" \
        --web.listen-address="127.0.0.1:$MYSQLD_EXPORTER_PORT")
    wait_for exporter-mysql "$STACK_TIMEOUT" "$pid" "$log" \
        http_ok "http://127.0.0.1:$MYSQLD_EXPORTER_PORT/metrics"
    prom_niced "$pid"
    say "exporter-mysql up on 127.0.0.1:$MYSQLD_EXPORTER_PORT"
}

# ------------------------------------------------------------------- Redis's

# The Redis stock's keys of every product in db_stock, for -check-single-keys
# (single keys: a SCAN of the keyspace each second would walk every
# {stock:P}:order:O).
prom_redis_keys() {
    mysql_root -N locklab <<<"SELECT product_code FROM db_stock ORDER BY id" |
        awk '{ printf "%s{stock:%s},{stock:%s}:sold", (NR > 1 ? "," : ""), $1, $1 }'
}

# The exporter works in .run/prometheus/exporter-redis: its working
# directory is its mark (proc_is_ours), as Redis's is.
redis_exporter_up() {
    local pid dir="$PROM_DIR/exporter-redis" log="$RUN/logs/exporter-redis.log" keys
    keys=$(prom_redis_keys)
    mkdir -p "$dir"
    if pid=$(svc_pid exporter-redis) && [[ $(cat "$dir/keys" 2>/dev/null) != "$keys" ]]; then
        say "exporter-redis: products changed, restarting it"
        svc_stop exporter-redis 10
    fi
    if pid=$(svc_pid exporter-redis); then
        say "exporter-redis already running (pid $pid)"
        return 0
    fi
    port_free_or_die "$REDIS_EXPORTER_PORT" exporter-redis
    pid=$(cd "$dir" && prom_spawn exporter-redis "$log" prometheus-redis-exporter \
        -redis.addr "redis://127.0.0.1:$(redis_port 1)" \
        -web.listen-address "127.0.0.1:$REDIS_EXPORTER_PORT" \
        -check-single-keys "$keys")
    printf '%s\n' "$keys" >"$dir/keys"
    wait_for exporter-redis "$STACK_TIMEOUT" "$pid" "$log" \
        http_ok "http://127.0.0.1:$REDIS_EXPORTER_PORT/metrics"
    prom_niced "$pid"
    say "exporter-redis up on 127.0.0.1:$REDIS_EXPORTER_PORT"
}

# ---------------------------------------------------------------- Prometheus

# prom_config N_INSTANCES N_REDIS: prometheus.yml.
prom_config() {
    local n=$1 nredis=$2 i k
    cat <<EOF
# generated by bench/stack up --prometheus (bench/lib/stack_prom.sh)
global:
  scrape_interval: ${PROM_SCRAPE_S}s
  scrape_timeout: ${PROM_SCRAPE_S}s
  evaluation_interval: ${PROM_SCRAPE_S}s
scrape_configs:
  - job_name: locklab
    static_configs:
      - targets:
EOF
    for ((i = 0; i < n; i++)); do printf '          - %s\n' "$(app_addr "$i")"; done
    cat <<EOF
  - job_name: mariadb
    static_configs:
      - targets: ['127.0.0.1:$MYSQLD_EXPORTER_PORT']
  - job_name: redis
    metrics_path: /scrape
    static_configs:
      - targets:
EOF
    for ((k = 1; k <= nredis; k++)); do printf '          - redis://127.0.0.1:%s\n' "$(redis_port "$k")"; done
    cat <<EOF
    relabel_configs:
      - source_labels: [__address__]
        target_label: __param_target
      - source_labels: [__param_target]
        target_label: instance
      - target_label: __address__
        replacement: 127.0.0.1:$REDIS_EXPORTER_PORT
EOF
}

prom_ready() { http_ok "http://127.0.0.1:$PROM_PORT/-/ready"; }

# prom_targets_up N: Prometheus has scraped N targets and found them up.
# Its discovery hands a new configuration's targets over 5 s after a
# (re)load, and until then the last run's samples (kept in data/) are all a
# query sees: `up` returns once the first scrapes are in.
prom_targets_up() {
    local got
    got=$(curl -s --max-time 2 "http://127.0.0.1:$PROM_PORT/api/v1/targets?state=active" |
        jq '[.data.activeTargets[] | select(.health == "up")] | length' 2>/dev/null)
    [[ $got == "$1" ]]
}

# prom_up N_INSTANCES N_REDIS: the exporters, then Prometheus, until it has
# scraped every target once.
prom_up() {
    local n=$1 nredis=$2 pid log="$RUN/logs/prometheus.log" targets=$(($1 + 1 + $2))
    mkdir -p "$PROM_DIR/data"
    mysqld_exporter_up
    redis_exporter_up
    prom_config "$n" "$nredis" >"$PROM_DIR/prometheus.yml.new"
    promtool check config "$PROM_DIR/prometheus.yml.new" >>"$log" 2>&1 ||
        { log_tail "$log"; die "promtool refuses the generated prometheus.yml"; }
    if pid=$(svc_pid prometheus); then
        if cmp -s "$PROM_DIR/prometheus.yml.new" "$PROM_DIR/prometheus.yml"; then
            rm -f "$PROM_DIR/prometheus.yml.new"
            say "prometheus already running (pid $pid)"
            return 0
        fi
        mv "$PROM_DIR/prometheus.yml.new" "$PROM_DIR/prometheus.yml"
        kill -HUP "$pid"
        wait_for "prometheus's $targets targets" "$STACK_TIMEOUT" "$pid" "$log" \
            prom_targets_up "$targets"
        say "prometheus reloaded with $n instance(s), $nredis Redis server(s)"
        return 0
    fi
    port_free_or_die "$PROM_PORT" prometheus
    mv "$PROM_DIR/prometheus.yml.new" "$PROM_DIR/prometheus.yml"
    pid=$(prom_spawn prometheus "$log" prometheus \
        --config.file="$PROM_DIR/prometheus.yml" \
        --storage.tsdb.path="$PROM_DIR/data" --storage.tsdb.retention.time=2d \
        --web.listen-address="127.0.0.1:$PROM_PORT")
    wait_for prometheus "$STACK_TIMEOUT" "$pid" "$log" prom_ready
    prom_niced "$pid"
    wait_for "prometheus's $targets targets" "$STACK_TIMEOUT" "$pid" "$log" \
        prom_targets_up "$targets"
    say "prometheus up on http://127.0.0.1:$PROM_PORT, scraping every ${PROM_SCRAPE_S}s"
}

# prom_down: stop whichever of them runs (quietly when none has a pid file).
prom_down() {
    local name
    for name in "${PROM_SERVICES[@]}"; do
        [[ -e $(pid_file "$name") ]] && svc_stop "$name" 15
    done
    return 0
}
