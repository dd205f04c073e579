#!/usr/bin/env bash
# Installs the Debian packages Hippie Studio needs (packaging/debian-packages.txt), only those
# missing, so running it again does nothing. Usage: install-deps.sh [--check] [PART...]
# With no PART every part is installed. --check lists what is missing and exits 1 if any.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
list="$here/debian-packages.txt"

check_only=0
parts=()
for arg in "$@"; do
  case "$arg" in
    --check) check_only=1 ;;
    -h|--help) sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) parts+=("$arg") ;;
  esac
done

wanted=()
while read -r part pkg; do
  [[ -z "${part:-}" || "$part" == \#* ]] && continue
  if [[ ${#parts[@]} -eq 0 ]] || printf '%s\n' "${parts[@]}" | grep -qx "$part"; then
    wanted+=("$pkg")
  fi
done < "$list"

missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#wanted[@]} packages present"
  exit 0
fi
if [[ $check_only -eq 1 ]]; then
  echo "install-deps: missing: ${missing[*]}"
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  sudo=sudo
  command -v sudo >/dev/null || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
else
  sudo=
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# The daemons among these (munge, slurmctld, slurmd, sshd) are for tests that start private
# instances of their own on 127.0.0.1: none is started as a system service at install. Debian's
# policy-rc.d says so to invoke-rc.d and deb-systemd-invoke; one already there is left as it is.
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\n# hippie-studio install-deps: no service starts while packages install\nexit 101\n' | $sudo tee "$policy" > /dev/null
  $sudo chmod 755 "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get install -y -qq "${missing[@]}"
