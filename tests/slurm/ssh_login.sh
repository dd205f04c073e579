# A private ssh login host for tests: OpenSSH's sshd on 127.0.0.1 and a free port, with a host
# key, a client key and an authorized_keys file of its own under a directory of the caller's,
# and an `ssh` (SSH_LOGIN_BIN/ssh, put first on PATH) that is the real /usr/bin/ssh with that
# directory's client config (-F) naming the host "hippie-login". The login's shells see
# SLURM_CONF (sshd's SetEnv), as a real login host sees its /etc/slurm/slurm.conf.
# Source it, then: ssh_login_start DIR || skip; PATH="$SSH_LOGIN_BIN:$PATH" ...; ssh_login_stop

SSH_LOGIN_DIR=""
SSH_LOGIN_BIN=""
SSH_LOGIN_WHY=""  # why it could not start

# ssh_login_start DIR: returns 0 with sshd answering as hippie-login, else 1 with SSH_LOGIN_WHY
# set and nothing left running.
ssh_login_start() {
    local dir="$1" port
    SSH_LOGIN_DIR="$dir"
    [ -x /usr/sbin/sshd ] || { SSH_LOGIN_WHY="sshd is not installed (apt-get install openssh-server)"; return 1; }
    command -v ssh-keygen >/dev/null || { SSH_LOGIN_WHY="ssh-keygen is not installed (openssh-client)"; return 1; }
    [ "$(id -u)" -eq 0 ] || { SSH_LOGIN_WHY="sshd must run as root here to log in as this user"; return 1; }
    mkdir -p "$dir/bin"
    # sshd's privilege separation directory (the package makes it when its service starts).
    mkdir -p /run/sshd && chmod 755 /run/sshd
    ssh-keygen -q -t ed25519 -N '' -f "$dir/host_ed25519" || { SSH_LOGIN_WHY="ssh-keygen failed"; return 1; }
    ssh-keygen -q -t ed25519 -N '' -f "$dir/client_ed25519" || { SSH_LOGIN_WHY="ssh-keygen failed"; return 1; }
    cp "$dir/client_ed25519.pub" "$dir/authorized_keys"
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    cat > "$dir/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port $port
HostKey $dir/host_ed25519
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
SetEnv SLURM_CONF=${SLURM_CONF:-/etc/slurm/slurm.conf}
CONF
    cat > "$dir/config" <<CONF
Host hippie-login
    HostName 127.0.0.1
    Port $port
    User $(id -un)
    IdentityFile $dir/client_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile $dir/known_hosts
    StrictHostKeyChecking accept-new
    LogLevel ERROR
CONF
    printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$dir/config" > "$dir/bin/ssh"
    chmod 755 "$dir/bin/ssh"
    SSH_LOGIN_BIN="$dir/bin"
    /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log" \
        || { SSH_LOGIN_WHY="sshd did not start: $(tail -1 "$dir/sshd.log" 2>/dev/null)"; ssh_login_stop; return 1; }
    local _
    for _ in $(seq 40); do
        "$dir/bin/ssh" -o BatchMode=yes -o ConnectTimeout=5 hippie-login true 2>/dev/null && return 0
        sleep 0.25
    done
    SSH_LOGIN_WHY="ssh to the private sshd failed: $("$dir/bin/ssh" -o BatchMode=yes hippie-login true 2>&1 | tail -1); $(tail -1 "$dir/sshd.log" 2>/dev/null)"
    ssh_login_stop
    return 1
}

# Stops the sshd it started (connections' own sshd processes end with their sessions).
ssh_login_stop() {
    [ -n "$SSH_LOGIN_DIR" ] && [ -f "$SSH_LOGIN_DIR/sshd.pid" ] && kill "$(cat "$SSH_LOGIN_DIR/sshd.pid")" 2>/dev/null
    return 0
}
