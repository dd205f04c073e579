# A private one-node Slurm cluster for tests and screenshots: munged, slurmctld and slurmd from
# Debian's slurm-wlm, started as root with a generated slurm.conf under a state directory of
# the caller's, on free ports, stopped (only the processes it started) by slurm_cluster_stop.
# Source it, then: slurm_cluster_start DIR || skip; export SLURM_CONF; ...; slurm_cluster_stop
#
# Settings that work on a container without cgroups or systemd: proctrack/linuxproc, task/none,
# select/cons_tres; no slurmdbd, so sacct has no accounting and final states come from
# `scontrol show job` (kept MinJobAge seconds).

SLURM_CLUSTER_DIR=""
SLURM_CLUSTER_WHY=""  # why it could not start

_slurm_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# slurm_cluster_start DIR: returns 0 with the cluster up (SLURM_CONF exported), else 1 with
# SLURM_CLUSTER_WHY set and nothing left running.
slurm_cluster_start() {
    local dir="$1"
    SLURM_CLUSTER_DIR="$dir"
    for tool in munged slurmctld slurmd sbatch squeue scontrol scancel; do
        command -v "$tool" >/dev/null || { SLURM_CLUSTER_WHY="$tool is not installed (apt-get install slurm-wlm)"; return 1; }
    done
    [ "$(id -u)" -eq 0 ] || { SLURM_CLUSTER_WHY="the daemons must run as root here (slurmd starts tasks as their user)"; return 1; }
    mkdir -p "$dir"/{state,spool,munge,log}
    chmod 700 "$dir/munge"
    local node cpus ctl_port node_port
    node=$(hostname -s)
    cpus=$(nproc)
    ctl_port=$(_slurm_free_port); node_port=$(_slurm_free_port)
    while [ "$node_port" = "$ctl_port" ]; do node_port=$(_slurm_free_port); done
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
    cat > "$dir/slurm.conf" <<CONF
ClusterName=hippietest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctl_port
SlurmdPort=$node_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$node Default=YES MaxTime=60 State=UP OverSubscribe=NO
CONF
    export SLURM_CONF="$dir/slurm.conf"
    munged --force --socket="$dir/munge/munge.sock" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
        > "$dir/log/munged.out" 2>&1 \
        || { SLURM_CLUSTER_WHY="munged did not start: $(tail -1 "$dir/log/munged.out")"; slurm_cluster_stop; return 1; }
    slurmctld -f "$SLURM_CONF" -i > "$dir/log/slurmctld.out" 2>&1 \
        || { SLURM_CLUSTER_WHY="slurmctld did not start: $(tail -1 "$dir/log/slurmctld.out")"; slurm_cluster_stop; return 1; }
    slurmd -f "$SLURM_CONF" > "$dir/log/slurmd.out" 2>&1 \
        || { SLURM_CLUSTER_WHY="slurmd did not start: $(tail -1 "$dir/log/slurmd.out")"; slurm_cluster_stop; return 1; }
    local state=""
    for _ in $(seq 60); do
        state=$(timeout 5 sinfo -h -N -o %T 2>/dev/null | head -1)
        [ "$state" = "idle" ] && return 0
        sleep 0.5
    done
    SLURM_CLUSTER_WHY="the node did not become idle in 30 s (state '$state'): $(tail -2 "$dir/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
    slurm_cluster_stop
    return 1
}

# Stops what slurm_cluster_start started, by the pids it wrote; waits until they are gone.
slurm_cluster_stop() {
    local dir="$SLURM_CLUSTER_DIR" pidfile pid
    [ -n "$dir" ] || return 0
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
        [ -s "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null
    done
    return 0
}
