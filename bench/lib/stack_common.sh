# shellcheck shell=bash
# bench/lib/stack_common.sh — the process bookkeeping under bench/stack.
#
# bench/stack runs every server of the topology as a plain background
# process of the current user, with all of its state under <repo>/.run.
# This file holds what every service shares:
#
#   * output: one "stack: ..." line per step, errors on stderr and exit 1;
#   * pid files in .run/pids/<name>.pid, and the identity check that makes
#     them safe: a pid is trusted only while /proc/PID shows our process
#     (its command line holds a mark of ours, such as the data folder, or
#     its working directory is ours), so a recycled pid is never signalled;
#   * starting a detached process (setsid + nohup, stdin from /dev/null),
#     stopping one (SIGTERM, bounded wait, SIGKILL) and bounded waits;
#   * loopback port probes with bash's /dev/tcp, so no netcat is needed;
#   * installing the Debian packages the stack needs, once, when root.
#
# It is sourced by bench/stack, which sets ROOT and RUN first; it defines
# functions only.

# ------------------------------------------------------------------ output

say() { printf 'stack: %s\n' "$*"; }
warn() { printf 'stack: warning: %s\n' "$*" >&2; }
die() { printf 'stack: error: %s\n' "$*" >&2; exit 1; }

# Print the last lines of a log to stderr, indented, to explain a failure.
log_tail() {
    local file=$1 lines=${2:-20}
    if [[ -s $file ]]; then
        printf 'stack: last %d lines of %s:\n' "$lines" "$file" >&2
        tail -n "$lines" "$file" | sed 's/^/    /' >&2
    else
        printf 'stack: (%s is empty or missing)\n' "$file" >&2
    fi
}

# Seconds since the epoch with milliseconds, for timings.
now_ms() { date +%s%3N; }

# --------------------------------------------------------------- secrets

# secret NAME: print the stack's secret NAME (mysql-password, admin-token),
# making it first: 24 random bytes in hex, in .run/secrets/NAME (the folder
# 0700, the file 0600). Secrets reach a process only through its
# environment, never its command line: /proc/PID/cmdline is readable by
# every user of the machine, /proc/PID/environ only by the process's owner.
secret() {
    local file="$RUN/secrets/$1" value
    if [[ ! -s $file ]]; then
        (
            umask 077
            mkdir -p "$RUN/secrets"
            head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$file.new"
            mv "$file.new" "$file"
        ) || die "cannot write $file"
    fi
    read -r value <"$file"
    printf '%s\n' "$value"
}

# ------------------------------------------------------------- pid files

pid_file() { printf '%s/pids/%s.pid\n' "$RUN" "$1"; }

# proc_is_ours PID MARK: true when PID is a live process whose command line
# contains MARK or whose working directory is MARK. Redis renames its
# process title ("redis-server 127.0.0.1:16379"), hence the cwd test.
proc_is_ours() {
    local pid=$1 mark=$2 cmdline cwd
    local -a argv=()
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ -r /proc/$pid/cmdline ]] || return 1
    # Read without a subprocess: `up` asks this of every service, often.
    mapfile -d '' -t argv <"/proc/$pid/cmdline" 2>/dev/null || return 1
    cmdline="${argv[*]} "
    [[ -n ${argv[*]} ]] || return 1        # a zombie has an empty cmdline
    [[ $cmdline == *"$mark"* ]] && return 0
    cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || return 1
    [[ $cwd == "$mark" ]]
}

# svc_pid NAME: print the pid of service NAME if it is running as ours.
# The mark comes from svc_mark (defined by bench/stack for every service).
svc_pid() {
    local name=$1 file pid
    file=$(pid_file "$name")
    [[ -r $file ]] || return 1
    read -r pid <"$file" || return 1
    proc_is_ours "$pid" "$(svc_mark "$name")" || return 1
    printf '%s\n' "$pid"
}

svc_running() { svc_pid "$1" >/dev/null; }

# proc_group PID: the process group of PID.
proc_group() {
    local stat rest
    stat=$(<"/proc/$1/stat") || return 1
    rest=${stat##*) }                     # the name in (...) may hold spaces
    read -r _ _ rest _ <<<"$rest"         # state ppid pgrp
    printf '%s
' "$rest"
}

# group_alive PGID: a process of group PGID is alive. Zombies do not count:
# they are dead, and some init processes (a VM's or a container's) reap
# orphans only every second or two. A process whose main thread has ended
# shows as a zombie while its other threads still run, and those hold its
# files, listening sockets included (an instance's exit under ASan showed
# it: the next start found its port taken), so a zombie's threads are read
# too.
# kill -0 on the group first: once its last process is reaped it fails at
# once, without reading every process's stat (hundreds of files, every
# 0.1 s of a stop).
group_alive() {
    local out p
    kill -0 -- "-$1" 2>/dev/null || return 1
    out=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v g="$1" '
        { s = $0; sub(/^.*\) /, "", s); split(s, f, " ")
          if (f[3] == g) { if (f[1] != "Z") { print "alive"; exit }; print $1 } }')
    [[ $out == *alive* ]] && return 0
    for p in $out; do           # zombies of the group: any thread left?
        cat "/proc/$p/task/"*/stat 2>/dev/null | awk '
            { s = $0; sub(/^.*\) /, "", s); if (s !~ /^[ZX]/) { alive = 1; exit } }
            END { exit !alive }' && return 0
    done
    return 1
}

# svc_signal PID SIG: every server here leads its own session (spawn's
# setsid, or its own daemonising), so the whole group is signalled: nginx's
# workers do not die with a SIGKILLed master and would keep the port.
svc_signal() {
    local pid=$1 sig=$2
    if [[ $(proc_group "$pid" 2>/dev/null) == "$pid" ]]; then
        kill -s "$sig" -- "-$pid" 2>/dev/null || true
    else
        kill -s "$sig" "$pid" 2>/dev/null || true
    fi
}

# svc_stop NAME [BOUND_S] [SIGNAL]: stop service NAME. TERM, then KILL once
# BOUND_S seconds have passed; SIGNAL=KILL skips the polite step (crash
# tests). Returns once the process and its group are gone; the pid file
# goes away in every case, stale or not.
svc_stop() {
    svc_stop_many "${2:-15}" "${3:-TERM}" "$1"
}

# svc_stop_many BOUND_S SIGNAL NAME...: svc_stop for several services at
# once: every one is signalled first, then all are waited on together, so
# stopping a stack takes as long as its slowest server (MariaDB flushing
# InnoDB), not the sum of them all. BOUND_S "-" is each one's svc_bound.
svc_stop_many() {
    local bound=$1 sig=$2 name pid file waited=0 left
    local -A pids=() groups=() sigs=() bounds=()
    shift 2
    for name in "$@"; do
        bounds[$name]=$bound
        [[ $bound == - ]] && bounds[$name]=$(svc_bound "$name")
        file=$(pid_file "$name")
        if ! pid=$(svc_pid "$name"); then
            [[ -e $file ]] && rm -f "$file"
            say "${name/-/:} not running"
            continue
        fi
        pids[$name]=$pid sigs[$name]=$sig groups[$name]=0
        [[ $(proc_group "$pid" 2>/dev/null) == "$pid" ]] && groups[$name]=1
        svc_signal "$pid" "$sig"
    done
    while ((${#pids[@]})); do
        left=0
        for name in "${!pids[@]}"; do
            pid=${pids[$name]}
            if proc_is_ours "$pid" "$(svc_mark "$name")" ||
                { ((groups[$name])) && group_alive "$pid"; }; then
                left=1
                if [[ ${sigs[$name]} != KILL ]] && ((waited >= bounds[$name] * 10)); then
                    warn "${name/-/:} (pid $pid) still running ${bounds[$name]}s after SIG${sigs[$name]}, sending SIGKILL"
                    sigs[$name]=KILL
                    if ((groups[$name])); then
                        kill -s KILL -- "-$pid" 2>/dev/null || true
                    else
                        kill -s KILL "$pid" 2>/dev/null || true
                    fi
                fi
                ((waited < (bounds[$name] + 30) * 10)) || die "${name/-/:} (pid $pid) survives SIGKILL"
                continue
            fi
            rm -f "$(pid_file "$name")"
            if [[ $sig == KILL ]]; then
                say "${name/-/:} killed (pid $pid)"
            else
                say "${name/-/:} stopped (pid $pid)"
            fi
            unset "pids[$name]"
        done
        ((left)) || break
        sleep 0.1
        waited=$((waited + 1))
    done
    return 0
}

# ---------------------------------------------------------------- priority

# The backends (MariaDB, Redis, ZooKeeper) get the CPU before the HTTP tier
# (nginx, the instances, the load generator), as they would on hosts of
# their own. On one small machine a MariaDB thread that holds the hot row's
# lock otherwise waits for a CPU behind HTTP work, and every sale waits
# with it (docs/comparison.md, "What the ratios depend on"; docs/stack.md,
# "CPU priority"). Every server here leads its own session, and with the
# kernel's autogroup on (the default) the CPU is split evenly between
# sessions, whatever the threads' nice values say: so a server's session
# gets the nice value too. 0 leaves the kernel's even split; lowering it
# needs root (CAP_SYS_NICE), and without it the servers start at 0 and
# `up` says so.
BACKEND_NICE=${LOCKLAB_STACK_BACKEND_NICE:--10}
if ! [[ $BACKEND_NICE =~ ^(-?[0-9]|-1[0-9]|-20)$ ]] || ((BACKEND_NICE > 0)); then
    echo "stack: LOCKLAB_STACK_BACKEND_NICE must be -20..0" >&2
    exit 2
fi

# BACKEND_PRIO: the command prefix that starts a backend at that nice
# value, which all its threads inherit (what counts when autogroup is off);
# empty when this user may not lower it.
BACKEND_PRIO=()
if ((BACKEND_NICE < 0)) && [[ $(nice -n "$BACKEND_NICE" nice 2>/dev/null) == "$BACKEND_NICE" ]]; then
    # shellcheck disable=SC2034 # read by stack_servers.sh, sourced after this file
    BACKEND_PRIO=(nice -n "$BACKEND_NICE")
fi

# backend_first NAME PID: the same for the session PID leads (what counts
# when autogroup is on); called once the server answers, so that PID has
# surely left this shell's session.
backend_first() {
    local ag=/proc/$2/autogroup
    ((BACKEND_NICE < 0)) && [[ -e $ag ]] || return 0
    echo "$BACKEND_NICE" 2>/dev/null >"$ag" ||
        say "$1: could not lower its nice to $BACKEND_NICE (needs root): it shares the CPU evenly with the HTTP tier"
}

# spawn LOG CMD...: start CMD detached from this shell (own session, no
# terminal, SIGHUP ignored, without fd 9 = .run/stack.lock, which a server
# would otherwise hold for its whole life), appending to LOG; prints its pid. A background
# child of a non-interactive shell is never a process-group leader, so
# setsid calls setsid(2) and execs in place: $! is the server's own pid.
spawn() {
    local log=$1
    shift
    printf '=== %s: %s\n' "$(date '+%F %T')" "$*" >>"$log"
    setsid nohup "$@" >>"$log" 2>&1 </dev/null 9>&- &
    printf '%s\n' "$!"
}

# ------------------------------------------------------------------- waits

# wait_for DESC BOUND_S PID LOG CMD...: poll CMD every 0.1 s until it
# succeeds. Fails with LOG's tail when PID (if not "-") dies or when BOUND_S
# seconds pass.
wait_for() {
    local desc=$1 bound=$2 pid=$3 log=$4 tries=0
    shift 4
    until "$@" >/dev/null 2>&1; do
        if [[ $pid != - ]] && ! kill -0 "$pid" 2>/dev/null; then
            log_tail "$log"
            die "$desc: the process (pid $pid) exited during start-up"
        fi
        if ((tries >= bound * 10)); then
            log_tail "$log"
            die "$desc: not ready after ${bound}s"
        fi
        sleep 0.1
        tries=$((tries + 1))
    done
}

# ------------------------------------------------------------------- ports

# port_open PORT: something accepts connections on 127.0.0.1:PORT. In this
# shell, no subprocess (`up` asks it of every port it is about to take):
# on the loopback a connect is answered at once, accepted or refused.
port_open() {
    local fd
    { exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
    exec {fd}>&-
}

# port_free_or_die PORT WHAT: refuse to start WHAT on a port someone else
# holds (a system service, another checkout's stack): never fight over it.
port_free_or_die() {
    if port_open "$1"; then
        die "port 127.0.0.1:$1 is in use by a process bench/stack did not start; cannot start $2"
    fi
}

# tcp_chat PORT TEXT: send TEXT, print the answer until the peer closes
# (ZooKeeper's four-letter words work this way).
tcp_chat() {
    # shellcheck disable=SC2016 # $1 and $2 expand in the inner bash
    timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
                       printf "%s" "$2" >&3
                       cat <&3' _ "$1" "$2" 2>/dev/null
}

# http_ok URL: GET URL answers 200.
http_ok() {
    local code
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null) || return 1
    [[ $code == 200 ]]
}

# ---------------------------------------------------------------- packages

# The Debian packages the stack, the server's build, bench/compare and the
# tests need, as "test:package" pairs: cmd:NAME must be on PATH, file:PATH
# must exist, pkg:NAME must be installed (libraries and headers have no
# command). chromium draws report.png (bench/lib/page.sh) and the tests
# read the report pages in it: 25 packages, 122 MB to fetch, 414 MB
# installed, about 10 s here; without it a fresh machine skipped tests.
# fonts-wqy-zenhei (7.5 MB) gives chromium the seeds' Chinese: the class
# page and the reports quote their section titles, boxes without it.
# faketime brings libfaketime, under which `up --redis-faketime` runs the
# Redis servers, so that bench/fault clock can move their wall clock.
STACK_NEEDS=(
    cmd:mariadbd:mariadb-server cmd:mariadb-install-db:mariadb-server
    cmd:mariadb:mariadb-client cmd:mariadb-admin:mariadb-client
    cmd:redis-server:redis-server cmd:redis-cli:redis-tools
    cmd:redis-sentinel:redis-sentinel
    file:/usr/lib/galera/libgalera_smm.so:galera-4 cmd:rsync:rsync
    file:/usr/share/java/zookeeper.jar:zookeeper
    file:/usr/share/java/slf4j-log4j12.jar:zookeeper
    file:/usr/share/java/log4j-1.2.jar:zookeeper
    cmd:java:default-jre-headless
    cmd:nginx:nginx-light cmd:wrk:wrk cmd:curl:curl cmd:jq:jq cmd:nft:nftables
    cmd:docker-compose:docker-compose
    cmd:jmeter:jmeter file:/usr/share/jmeter/lib/ext/ApacheJMeter_http.jar:jmeter-http
    cmd:javac:default-jdk-headless
    file:/usr/share/java/curator-recipes.jar:libcurator-recipes-java
    file:/usr/share/java/slf4j-nop.jar:libslf4j-java cmd:shellcheck:shellcheck
    cmd:cmake:cmake cmd:make:make cmd:gcc:gcc cmd:pkg-config:pkg-config
    pkg:libc6-dev:libc6-dev
    pkg:libmicrohttpd-dev:libmicrohttpd-dev pkg:libhiredis-dev:libhiredis-dev
    pkg:libmariadb-dev:libmariadb-dev pkg:libzookeeper-mt-dev:libzookeeper-mt-dev
    pkg:libjansson-dev:libjansson-dev pkg:libevent-dev:libevent-dev
    cmd:etcd:etcd-server cmd:etcdctl:etcd-client pkg:libcurl4-openssl-dev:libcurl4-openssl-dev
    cmd:prometheus:prometheus cmd:promtool:prometheus
    cmd:prometheus-mysqld-exporter:prometheus-mysqld-exporter
    cmd:prometheus-redis-exporter:prometheus-redis-exporter
    pkg:libnetfilter-queue-dev:libnetfilter-queue-dev cmd:iptables:iptables
    cmd:chromium:chromium file:/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc:fonts-wqy-zenhei
    cmd:faketime:faketime
)

# missing_packages: print the packages whose test fails, once each. The
# pkg: tests are one dpkg-query for all of them: every `bench/stack up`
# runs this, and a test suite runs `up` dozens of times.
missing_packages() {
    local need kind what pkg status
    local -a debs=()
    local -A seen=() installed=()
    for need in "${STACK_NEEDS[@]}"; do
        [[ $need == pkg:* ]] || continue
        what=${need#pkg:}
        debs+=("${what%%:*}")
    done
    while read -r pkg status; do
        [[ $status == "install ok installed" ]] && installed[$pkg]=1
    done < <(dpkg-query -W -f='${Package} ${Status}\n' "${debs[@]}" 2>/dev/null)
    for need in "${STACK_NEEDS[@]}"; do
        kind=${need%%:*}
        what=${need#*:}
        pkg=${what##*:}
        what=${what%:*}
        case $kind in
            cmd) command -v "$what" >/dev/null 2>&1 && continue ;;
            file) [[ -e $what ]] && continue ;;
            pkg) [[ -n ${installed[$what]:-} ]] && continue ;;
        esac
        [[ -n ${seen[$pkg]:-} ]] && continue
        seen[$pkg]=1
        printf '%s\n' "$pkg"
    done
}

# ensure_packages: install what is missing when root (one apt-get update,
# one install, no recommends), or explain what to install otherwise. While
# installing, a policy-rc.d (unless the machine has one) keeps the
# packages' own services (MariaDB on 3306, Redis on 6379, nginx on 80,
# ZooKeeper on 2181, etcd on 2379) from starting: the stack never runs system services.
ensure_packages() {
    local missing policy=/usr/sbin/policy-rc.d own_policy=0 rc=0
    mapfile -t missing < <(missing_packages)
    ((${#missing[@]} == 0)) && return 0
    if ((EUID != 0)); then
        die "missing packages: ${missing[*]}; install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}"
    fi
    say "installing ${missing[*]}"
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\n# written by locklab bench/stack during apt-get install\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        own_policy=1
    fi
    {
        DEBIAN_FRONTEND=noninteractive apt-get update -q &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
                --no-install-recommends "${missing[@]}"
    } >>"$RUN/logs/apt.log" 2>&1 || rc=$?
    ((own_policy)) && rm -f "$policy"
    if ((rc != 0)); then
        log_tail "$RUN/logs/apt.log"
        die "apt-get install failed (exit $rc)"
    fi
    mapfile -t missing < <(missing_packages)
    ((${#missing[@]} == 0)) || die "still missing after install: ${missing[*]}"
}
