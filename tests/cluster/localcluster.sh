#!/usr/bin/env bash
# localcluster.sh: a real single-machine SLURM cluster (with accounting) for
# caramel's tests and CI.  Debian 12, run as root; no systemd needed.
#
#   localcluster.sh install                       install the Debian packages (idempotent)
#   localcluster.sh start [--nodes 1|2] [--dir DIR]   start (installs first if needed)
#   localcluster.sh stop  [--dir DIR]             stop every daemon started from DIR
#   localcluster.sh status [--dir DIR]            exit 0 running, 3 stopped, 1 partial
#   localcluster.sh env   [--dir DIR]             print `export SLURM_CONF=...`
#
# Everything (configuration, state, spool, logs, pid files, the MariaDB data)
# lives under DIR (default /tmp/caramel-slurm, or $CARAMEL_SLURM_DIR); nothing
# is written to /etc/slurm.  Clients find the cluster through SLURM_CONF:
#   eval "$(tests/cluster/localcluster.sh env)"
# The only shared system paths used are munge's: its key /etc/munge/munge.key
# (created by the package) and its socket directory /run/munge, because
# slurm's clients and daemons talk to munged through the default socket.
#
# Tunables (environment):
#   CARAMEL_SLURM_DIR        default DIR
#   CARAMEL_SLURM_PORT_BASE  first of the TCP ports used (default 16800):
#                            +6 MariaDB, +17 slurmctld, +18 slurmd (1 node),
#                            +19 slurmdbd, +21/+22 slurmd n1/n2
#   CARAMEL_SLURM_TIMEOUT    seconds for each readiness wait (default 60)
#   CARAMEL_SLURM_SITE_SIZE  1 (default): nodes claim 128 cores, 512 GB, 8 GPUs (counted
#                            only), so GPU-system job scripts are accepted; 0: real size
#   CARAMEL_SLURM_PARTITIONS further partition names (default: CARAML's dc-gpu dc-h100
#                            dc-wai dc-gh dc-mi200 dc-ipu all)
#   CARAMEL_SLURM_NO_INSTALL=1   make `start` fail instead of installing
#
# Every wait is bounded; on failure the script prints what it waited for and
# the tail of the relevant log, and exits non-zero.
set -uo pipefail

PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server mariadb-client)
CLUSTER_NAME=caramel
TEST_ACCOUNT=caramel
DB_NAME=slurm_acct_db
DB_USER=slurm
DB_PASS=caramel-slurm-db

DIR=${CARAMEL_SLURM_DIR:-/tmp/caramel-slurm}
NODES=1
PORT_BASE=${CARAMEL_SLURM_PORT_BASE:-16800}
WAIT=${CARAMEL_SLURM_TIMEOUT:-60}
# further partitions over the same nodes: by default the ones CARAML's benchmark files ask for,
# so their job scripts are accepted here as written
EXTRA_PARTITIONS=${CARAMEL_SLURM_PARTITIONS-dc-gpu dc-h100 dc-wai dc-gh dc-mi200 dc-ipu all}
FAKE_GPUS=8

log() { printf 'localcluster: %s\n' "$*" >&2; }

die() {
    # die MESSAGE [LOGFILE...]: message, the tail of each log, exit 1
    local msg=$1; shift
    printf 'localcluster: ERROR: %s\n' "$msg" >&2
    local f
    for f in "$@"; do
        if [[ -s $f ]]; then
            printf -- '---- last lines of %s ----\n' "$f" >&2
            tail -n 30 "$f" >&2
            printf -- '----\n' >&2
        fi
    done
    exit 1
}

need_root() {
    [[ $(id -u) -eq 0 ]] || die "must run as root (the daemons run as root/munge/mysql)"
}

# ---------------------------------------------------------------- paths
set_paths() {
    DIR=$(readlink -m -- "$DIR")
    ETC=$DIR/etc
    CONF=$ETC/slurm.conf
    DBDCONF=$ETC/slurmdbd.conf
    RUN=$DIR/run
    LOGS=$DIR/log
    STATE=$DIR/state
    SPOOL=$DIR/spool
    DB_DATA=$DIR/mysql
    DB_SOCK=$RUN/mysqld/mysqld.sock
    DB_PID=$RUN/mysqld/mysqld.pid
    DB_LOG=$LOGS/mysqld.log
    MUNGE_PID=$RUN/munge/munged.pid
    MUNGE_LOG=$LOGS/munge/munged.log
    DBD_PID=$RUN/slurmdbd.pid
    DBD_LOG=$LOGS/slurmdbd.log
    CTLD_PID=$RUN/slurmctld.pid
    CTLD_LOG=$LOGS/slurmctld.log
    NODES_FILE=$DIR/nodes
    LOCK=$DIR/.lock
    DB_PORT=$((PORT_BASE + 6))
    CTLD_PORT=$((PORT_BASE + 17))
    SLURMD_PORT=$((PORT_BASE + 18))
    DBD_PORT=$((PORT_BASE + 19))
    N1_PORT=$((PORT_BASE + 21))
    N2_PORT=$((PORT_BASE + 22))
}

node_names() {
    # node names for a node count
    if [[ $1 == 2 ]]; then echo "n1 n2"; else echo "localhost"; fi
}
slurmd_pid() { echo "$RUN/slurmd-$1.pid"; }
slurmd_log() { echo "$LOGS/slurmd-$1.log"; }

# ---------------------------------------------------------------- processes
pid_of() {
    # pid_of PIDFILE EXPECTED_COMM: print the pid if the process is alive and
    # is the expected program (guards against a recycled pid).
    local f=$1 comm=$2 pid
    [[ -s $f ]] || return 1
    pid=$(tr -dc '0-9' <"$f")
    [[ -n $pid ]] || return 1
    [[ -r /proc/$pid/comm ]] || return 1
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm"* ]] || return 1
    echo "$pid"
}

alive() { pid_of "$1" "$2" >/dev/null; }

stop_pidfile() {
    # stop_pidfile NAME PIDFILE COMM: SIGTERM, wait, SIGKILL, wait (bounded)
    local name=$1 f=$2 comm=$3 pid i
    pid=$(pid_of "$f" "$comm") || { rm -f "$f"; return 0; }
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 300; i++)); do       # 30 s
        [[ -d /proc/$pid ]] || break
        # a zombie (our own child) counts as gone
        [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) == Z ]] && break
        sleep 0.1
    done
    if [[ -d /proc/$pid ]] && [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; then
        log "$name did not exit after SIGTERM within 30 s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null
        for ((i = 0; i < 100; i++)); do
            [[ -d /proc/$pid ]] || break
            sleep 0.1
        done
    fi
    rm -f "$f"
}

port_busy() {
    # true when something accepts TCP connections on 127.0.0.1:$1
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

wait_until() {
    # wait_until SECONDS DESCRIPTION COMMAND...: poll every 0.1 s
    local secs=$1 what=$2; shift 2
    local deadline=$((SECONDS + secs))
    while ((SECONDS < deadline)); do
        "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    "$@" >/dev/null 2>&1 && return 0
    return 1
}

daemonize() {
    # daemonize LOG COMMAND...: fully detached (new session, no inherited
    # stdin/stdout/stderr, so a caller capturing output never hangs on us)
    local logf=$1; shift
    # 9>&-: the start/stop lock must not outlive this script in the daemons
    setsid "$@" </dev/null >>"$logf" 2>&1 9>&- &
    disown 2>/dev/null || true
}

# ---------------------------------------------------------------- install
missing_packages() {
    local p st
    for p in "${PACKAGES[@]}"; do
        st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null) || st=
        [[ $st == installed ]] || echo "$p"
    done
}

cmd_install() {
    need_root
    local missing
    missing=$(missing_packages | tr '\n' ' ')
    if [[ -z ${missing// /} ]]; then
        log "packages already installed: ${PACKAGES[*]}"
        return 0
    fi
    log "installing: $missing"
    local created_policy=0 policy=/usr/sbin/policy-rc.d
    if [[ ! -e $policy ]]; then
        # keep the packages' init scripts from starting system daemons
        printf '#!/bin/sh\n# created by caramel localcluster.sh during install\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        created_policy=1
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    local apt_opts=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3
                    -o Acquire::http::Timeout=60 -o Dpkg::Options::=--force-confdef
                    -o Dpkg::Options::=--force-confold)
    export DEBIAN_FRONTEND=noninteractive
    local t0=$SECONDS rc
    timeout 900 apt-get "${apt_opts[@]}" update -q >/dev/null ||
        log "warning: apt-get update failed (exit $?); trying the install anyway"
    # shellcheck disable=SC2086
    timeout 1800 apt-get "${apt_opts[@]}" install -y -q --no-install-recommends $missing
    rc=$?
    if ((created_policy)); then rm -f "$policy"; trap - EXIT; fi
    ((rc == 0)) || die "apt-get install failed (exit $rc)"
    missing=$(missing_packages | tr '\n' ' ')
    [[ -z ${missing// /} ]] || die "still not installed after apt-get: $missing"
    log "installed in $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------- config
write_configs() {
    local nodes=$1
    mkdir -p "$ETC" "$RUN" "$LOGS" "$STATE/ctld" "$SPOOL"
    # hardware as slurmd sees it; keep a little memory back so the node
    # never drains for "Low RealMemory"
    local hw cpus boards sockets cores threads mem
    hw=$(slurmd -C 2>/dev/null | head -n1)
    cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hw")
    boards=$(sed -n 's/.* Boards=\([0-9]*\).*/\1/p' <<<"$hw")
    sockets=$(sed -n 's/.* SocketsPerBoard=\([0-9]*\).*/\1/p' <<<"$hw")
    cores=$(sed -n 's/.* CoresPerSocket=\([0-9]*\).*/\1/p' <<<"$hw")
    threads=$(sed -n 's/.* ThreadsPerCore=\([0-9]*\).*/\1/p' <<<"$hw")
    mem=$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$hw")
    [[ -n $cpus && -n $mem ]] || die "could not read the hardware from 'slurmd -C' (got: $hw)"
    mem=$((mem * 95 / 100))
    # Gres=gpu:8 (counted, no devices): job scripts written for GPU systems (--gres=gpu:4) are accepted
    # With CARAMEL_SLURM_SITE_SIZE=1 (the default) the nodes claim the size of a GPU node of the
    # systems caramel ships (128 cores, 512 GB: SlurmdParameters=config_overrides), so job scripts
    # written for them are accepted as written; the jobs still share this machine's real cores.
    if [[ ${CARAMEL_SLURM_SITE_SIZE:-1} == 1 ]]; then
        cpus=128 boards=1 sockets=2 cores=64 threads=1 mem=512000
    fi
    local nodehw="CPUs=$cpus Boards=${boards:-1} SocketsPerBoard=${sockets:-1} CoresPerSocket=${cores:-$cpus} ThreadsPerCore=${threads:-1} RealMemory=$mem Gres=gpu:$FAKE_GPUS State=UNKNOWN"
    # SLURM drops GPUs without a device file and takes only character devices: stand-ins of
    # /dev/null's kind (1,3), so nothing can be done with them but count them
    mkdir -p "$DIR/dev"
    local i
    for ((i = 0; i < FAKE_GPUS; i++)); do
        [[ -c $DIR/dev/gpu$i ]] || mknod "$DIR/dev/gpu$i" c 1 3 || die "mknod $DIR/dev/gpu$i failed"
    done
    printf '# Written by caramel tests/cluster/localcluster.sh: GPUs that are only counted.\nAutoDetect=off\nName=gpu File=%s/dev/gpu[0-%d]\n' \
        "$DIR" $((FAKE_GPUS - 1)) >"$ETC/gres.conf"

    local nodelines
    if [[ $nodes == 2 ]]; then
        nodelines="NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$N1_PORT $nodehw
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=$N2_PORT $nodehw"
    else
        nodelines="NodeName=localhost NodeHostname=localhost NodeAddr=127.0.0.1 Port=$SLURMD_PORT $nodehw"
    fi

    cat >"$CONF.new" <<EOF
# Written by caramel tests/cluster/localcluster.sh; do not edit (rewritten on start).
ClusterName=$CLUSTER_NAME
GresTypes=gpu
SlurmdParameters=config_overrides
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
# cgroup plugins do not work on this kind of machine
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
# without DefMemPerCPU each job takes all memory and jobs run one at a time
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=1024
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
# in 22.05 this is ignored under SchedulerParameters
DependencyParameters=kill_invalid_depend
KillWait=5
InactiveLimit=0
MinJobAge=300
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$SPOOL/%n
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$RUN/slurmd-%n.pid
SlurmctldLogFile=$CTLD_LOG
SlurmdLogFile=$LOGS/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
JobCompType=jobcomp/none
$nodelines
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=batch Nodes=ALL Default=NO MaxTime=INFINITE State=UP
PartitionName=compute Nodes=ALL Default=NO MaxTime=INFINITE State=UP
$(for p in $EXTRA_PARTITIONS; do echo "PartitionName=$p Nodes=ALL Default=NO MaxTime=INFINITE State=UP"; done)
EOF
    mv -f "$CONF.new" "$CONF"

    (
        umask 077
        cat >"$DBDCONF.new" <<EOF
# Written by caramel tests/cluster/localcluster.sh (must be mode 600).
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
DebugLevel=info
LogFile=$DBD_LOG
PidFile=$DBD_PID
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=$DB_USER
StoragePass=$DB_PASS
StorageLoc=$DB_NAME
EOF
    )
    chmod 600 "$DBDCONF.new"
    mv -f "$DBDCONF.new" "$DBDCONF"
    echo "$nodes" >"$NODES_FILE"
}

# ---------------------------------------------------------------- daemons
start_munge() {
    if timeout 5 bash -c 'munge -n | unmunge' >/dev/null 2>&1; then
        if ! alive "$MUNGE_PID" munged; then
            log "munged: a munged already answers on the default socket; using it"
        fi
        return 0
    fi
    local key=/etc/munge/munge.key
    if [[ ! -s $key ]]; then
        log "creating $key"
        install -d -o munge -g munge -m 700 /etc/munge
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile="$key" || die "mungekey failed"
        else
            dd if=/dev/urandom bs=1 count=1024 of="$key" status=none
        fi
    fi
    chown munge:munge "$key" && chmod 400 "$key"
    install -d -o munge -g munge -m 755 /run/munge
    install -d -o munge -g munge -m 700 "$RUN/munge" "$LOGS/munge"
    rm -f "$MUNGE_PID"
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged --pid-file="$MUNGE_PID" \
        --log-file="$MUNGE_LOG" --seed-file="$RUN/munge/munged.seed" \
        </dev/null >>"$LOGS/munged.out" 2>&1 9>&- ||
        die "munged failed to start" "$MUNGE_LOG" "$LOGS/munged.out"
    wait_until "$WAIT" munge timeout 5 bash -c 'munge -n | unmunge' ||
        die "munged does not answer ('munge -n | unmunge') after ${WAIT}s" "$MUNGE_LOG" "$LOGS/munged.out"
}

db_client() { timeout 30 mariadb --no-defaults --socket="$DB_SOCK" -u root "$@"; }

start_mariadb() {
    alive "$DB_PID" mariadbd && return 0
    port_busy "$DB_PORT" && die "port $DB_PORT (MariaDB) is in use by another program; set CARAMEL_SLURM_PORT_BASE"
    install -d -o mysql -g mysql -m 755 "$RUN/mysqld"
    install -d -o mysql -g mysql -m 750 "$DB_DATA"
    touch "$DB_LOG" && chown mysql:mysql "$DB_LOG"
    if [[ ! -d $DB_DATA/mysql ]]; then
        log "initialising MariaDB in $DB_DATA"
        timeout 300 mariadb-install-db --no-defaults --user=mysql --datadir="$DB_DATA" \
            --auth-root-authentication-method=socket --skip-test-db \
            >>"$LOGS/mariadb-install-db.log" 2>&1 ||
            die "mariadb-install-db failed" "$LOGS/mariadb-install-db.log"
    fi
    rm -f "$DB_PID" "$DB_SOCK"
    log "starting MariaDB (port $DB_PORT)"
    # settings slurmdbd recommends, small otherwise; durability is not needed
    daemonize "$LOGS/mysqld.out" /usr/sbin/mariadbd --no-defaults --user=mysql \
        --datadir="$DB_DATA" --socket="$DB_SOCK" --pid-file="$DB_PID" \
        --port="$DB_PORT" --bind-address=127.0.0.1 --log-error="$DB_LOG" \
        --skip-log-bin --innodb-buffer-pool-size=128M --innodb-log-file-size=64M \
        --innodb-lock-wait-timeout=900 --innodb-flush-log-at-trx-commit=2 \
        --max-connections=100
    wait_until "$WAIT" MariaDB db_client -e 'SELECT 1' ||
        die "MariaDB does not answer on $DB_SOCK after ${WAIT}s" "$DB_LOG" "$LOGS/mysqld.out"
    if [[ ! -e $DB_DATA/.caramel-ready ]]; then
        db_client <<EOF || die "could not create the slurm database/user" "$DB_LOG"
CREATE DATABASE IF NOT EXISTS $DB_NAME;
CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'localhost';
GRANT ALL ON $DB_NAME.* TO '$DB_USER'@'127.0.0.1';
FLUSH PRIVILEGES;
EOF
        touch "$DB_DATA/.caramel-ready"
    fi
}

sacctmgr_q() { timeout 20 sacctmgr -i -n -P "$@"; }

start_slurmdbd() {
    if ! alive "$DBD_PID" slurmdbd; then
        port_busy "$DBD_PORT" && die "port $DBD_PORT (slurmdbd) is in use by another program; set CARAMEL_SLURM_PORT_BASE"
        rm -f "$DBD_PID"
        log "starting slurmdbd (port $DBD_PORT)"
        SLURM_CONF=$CONF daemonize "$LOGS/slurmdbd.out" /usr/sbin/slurmdbd
    fi
    # first start creates the tables: allow for it
    wait_until "$WAIT" slurmdbd sacctmgr_q show cluster ||
        die "slurmdbd does not answer (sacctmgr show cluster) after ${WAIT}s" "$DBD_LOG" "$LOGS/slurmdbd.out"
    if [[ -z $(sacctmgr_q show cluster format=cluster where cluster=$CLUSTER_NAME 2>/dev/null) ]]; then
        log "sacctmgr: adding cluster $CLUSTER_NAME"
        sacctmgr_q add cluster "$CLUSTER_NAME" >/dev/null ||
            die "sacctmgr add cluster failed" "$DBD_LOG"
    fi
    if [[ -z $(sacctmgr_q show account format=account where account=$TEST_ACCOUNT 2>/dev/null) ]]; then
        log "sacctmgr: adding account $TEST_ACCOUNT"
        sacctmgr_q add account "$TEST_ACCOUNT" cluster="$CLUSTER_NAME" \
            description="caramel tests" organization=caramel >/dev/null ||
            die "sacctmgr add account failed" "$DBD_LOG"
    fi
    if [[ -z $(sacctmgr_q show assoc format=user where user=root account=$TEST_ACCOUNT cluster=$CLUSTER_NAME 2>/dev/null) ]]; then
        # root keeps its default account `root`; it may also charge `caramel`
        sacctmgr_q add user root account="$TEST_ACCOUNT" cluster="$CLUSTER_NAME" >/dev/null ||
            die "sacctmgr add user root account=$TEST_ACCOUNT failed" "$DBD_LOG"
    fi
}

ctld_up() { timeout 10 scontrol ping 2>/dev/null | grep -q 'is UP'; }

start_slurmctld() {
    alive "$CTLD_PID" slurmctld && return 0
    port_busy "$CTLD_PORT" && die "port $CTLD_PORT (slurmctld) is in use by another program; set CARAMEL_SLURM_PORT_BASE"
    rm -f "$CTLD_PID"
    log "starting slurmctld (port $CTLD_PORT)"
    SLURM_CONF=$CONF daemonize "$LOGS/slurmctld.out" /usr/sbin/slurmctld -f "$CONF"
    wait_until "$WAIT" slurmctld ctld_up ||
        die "slurmctld not UP (scontrol ping) after ${WAIT}s" "$CTLD_LOG" "$LOGS/slurmctld.out"
}

start_slurmd() {
    local n=$1 port=$2
    alive "$(slurmd_pid "$n")" slurmd && return 0
    port_busy "$port" && die "port $port (slurmd $n) is in use by another program; set CARAMEL_SLURM_PORT_BASE"
    mkdir -p "$SPOOL/$n"
    rm -f "$(slurmd_pid "$n")"
    log "starting slurmd $n (port $port)"
    SLURM_CONF=$CONF daemonize "$LOGS/slurmd-$n.out" /usr/sbin/slurmd -f "$CONF" -N "$n"
}

nodes_idle() {
    # all configured nodes report idle (or mixed/allocated: they are up)
    local want=$1 out n st
    out=$(timeout 10 sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
    for n in $want; do
        st=$(awk -v n="$n" '$1 == n {print $2; exit}' <<<"$out")
        [[ $st == idle || $st == mix || $st == alloc ]] || return 1
    done
}

sacct_answers() { timeout 20 sacct -n -X -S now-1minutes >/dev/null 2>&1; }

# ---------------------------------------------------------------- commands
all_running() {
    # all daemons of the recorded configuration are alive and answer
    [[ -s $NODES_FILE ]] || return 1
    local nodes n
    nodes=$(cat "$NODES_FILE")
    alive "$DB_PID" mariadbd || return 1
    alive "$DBD_PID" slurmdbd || return 1
    alive "$CTLD_PID" slurmctld || return 1
    for n in $(node_names "$nodes"); do alive "$(slurmd_pid "$n")" slurmd || return 1; done
    timeout 5 bash -c 'munge -n | unmunge' >/dev/null 2>&1 || return 1
    SLURM_CONF=$CONF ctld_up || return 1
}

any_running() {
    alive "$DB_PID" mariadbd || alive "$DBD_PID" slurmdbd || alive "$CTLD_PID" slurmctld ||
        alive "$MUNGE_PID" munged && return 0
    local f
    for f in "$RUN"/slurmd-*.pid; do [[ -e $f ]] && alive "$f" slurmd && return 0; done
    return 1
}

with_lock() {
    # serialise start/stop on the same DIR (parallel test workers)
    mkdir -p "$DIR"
    exec 9>"$LOCK"
    flock -w 600 9 || die "could not lock $LOCK within 600 s (another start/stop hangs?)"
}

cmd_start() {
    need_root
    set_paths
    if ! command -v slurmctld >/dev/null || [[ -n $(missing_packages) ]]; then
        [[ ${CARAMEL_SLURM_NO_INSTALL:-0} == 1 ]] &&
            die "SLURM packages missing and CARAMEL_SLURM_NO_INSTALL=1; run '$0 install'"
        cmd_install
    fi
    with_lock
    local t0=$SECONDS
    if all_running; then
        if [[ $(cat "$NODES_FILE") == "$NODES" ]]; then
            log "already running ($NODES node(s), $DIR)"
            return 0
        fi
        log "running with $(cat "$NODES_FILE") node(s); restarting with $NODES"
        do_stop
    elif any_running; then
        log "partly running; restarting"
        do_stop
    fi
    export SLURM_CONF=$CONF
    write_configs "$NODES"
    start_munge
    start_mariadb
    start_slurmdbd
    start_slurmctld
    local n want
    want=$(node_names "$NODES")
    if [[ $NODES == 2 ]]; then
        start_slurmd n1 "$N1_PORT"
        start_slurmd n2 "$N2_PORT"
    else
        start_slurmd localhost "$SLURMD_PORT"
    fi
    # a node drained under an earlier configuration keeps that state across restarts: resume it
    for n in $want; do
        SLURM_CONF=$CONF timeout 10 scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true
    done
    if ! wait_until "$WAIT" "nodes idle" nodes_idle "$want"; then
        local logs=("$CTLD_LOG")
        for n in $want; do logs+=("$(slurmd_log "$n")" "$LOGS/slurmd-$n.out"); done
        timeout 10 sinfo -N -l >&2
        die "node(s) $want not idle after ${WAIT}s" "${logs[@]}"
    fi
    wait_until "$WAIT" sacct sacct_answers ||
        die "sacct does not answer after ${WAIT}s" "$DBD_LOG" "$CTLD_LOG"
    log "cluster up in $((SECONDS - t0)) s: $NODES node(s) [$want], partitions debug (default), batch, compute; $DIR"
    log "use it with: eval \"\$($0 env --dir $DIR)\""
}

do_stop() {
    local f n
    # cancel what still runs, so no job step outlives its slurmd
    if alive "$CTLD_PID" slurmctld && SLURM_CONF=$CONF ctld_up; then
        local ids
        ids=$(SLURM_CONF=$CONF timeout 10 squeue -h -o %A 2>/dev/null | tr '\n' ' ')
        if [[ -n ${ids// /} ]]; then
            log "cancelling jobs: $ids"
            # shellcheck disable=SC2086
            SLURM_CONF=$CONF timeout 10 scancel $ids 2>/dev/null
            local i
            for ((i = 0; i < 150; i++)); do  # up to 15 s for the steps to end
                [[ -z $(SLURM_CONF=$CONF timeout 5 squeue -h -t R,CG -o %A 2>/dev/null) ]] && break
                sleep 0.1
            done
        fi
    fi
    for f in "$RUN"/slurmd-*.pid; do
        [[ -e $f ]] || continue
        n=${f##*/slurmd-}; n=${n%.pid}
        stop_pidfile "slurmd $n" "$f" slurmd
    done
    stop_pidfile slurmctld "$CTLD_PID" slurmctld
    stop_pidfile slurmdbd "$DBD_PID" slurmdbd
    stop_pidfile MariaDB "$DB_PID" mariadbd
    stop_pidfile munged "$MUNGE_PID" munged
}

cmd_stop() {
    need_root
    set_paths
    [[ -d $DIR ]] || { log "nothing to stop ($DIR does not exist)"; return 0; }
    with_lock
    if ! any_running; then
        log "not running ($DIR)"
        return 0
    fi
    do_stop
    log "stopped ($DIR)"
}

cmd_status() {
    set_paths
    local parts=() up=0 total=0 n nodes
    nodes=$(cat "$NODES_FILE" 2>/dev/null || echo 1)
    local names=(munged MariaDB slurmdbd slurmctld) files=("$MUNGE_PID" "$DB_PID" "$DBD_PID" "$CTLD_PID")
    local comms=(munged mariadbd slurmdbd slurmctld) i
    for n in $(node_names "$nodes"); do
        names+=("slurmd-$n"); files+=("$(slurmd_pid "$n")"); comms+=(slurmd)
    done
    for i in "${!names[@]}"; do
        total=$((total + 1))
        if pid=$(pid_of "${files[$i]}" "${comms[$i]}"); then
            up=$((up + 1)); parts+=("${names[$i]}=$pid")
        else
            parts+=("${names[$i]}=down")
        fi
    done
    if ((up == total)); then
        echo "running: $nodes node(s), dir $DIR (${parts[*]})"
        SLURM_CONF=$CONF timeout 10 sinfo 2>/dev/null
        return 0
    elif ((up == 0)); then
        echo "stopped (dir $DIR)"
        return 3
    fi
    echo "partly running: ${parts[*]} (dir $DIR)"
    return 1
}

cmd_env() {
    set_paths
    printf 'export SLURM_CONF=%q\n' "$CONF"
}

usage() {
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
}

main() {
    local cmd=${1:-}
    [[ $# -gt 0 ]] && shift
    while [[ $# -gt 0 ]]; do
        case $1 in
            --nodes) NODES=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
            --nodes=*) NODES=${1#*=}; shift ;;
            --dir) DIR=${2:-}; shift 2 || { usage >&2; exit 2; } ;;
            --dir=*) DIR=${1#*=}; shift ;;
            -h | --help) usage; exit 0 ;;
            *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
        esac
    done
    [[ $NODES == 1 || $NODES == 2 ]] || { echo "--nodes must be 1 or 2" >&2; exit 2; }
    [[ -n $DIR ]] || { echo "--dir must not be empty" >&2; exit 2; }
    case $cmd in
        install) cmd_install ;;
        start) cmd_start ;;
        stop) cmd_stop ;;
        status) cmd_status ;;
        env) cmd_env ;;
        -h | --help | help) usage ;;
        *) usage >&2; exit 2 ;;
    esac
}

main "$@"
