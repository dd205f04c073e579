#!/usr/bin/env bash
# The studio's Debian package as a user gets it: cpack builds the `hippie-studio` .deb (the
# studio and Unspecified components), dpkg-deb unpacks it into a scratch root, and the
# programs run from there. Checks that apt resolves its Depends, the file list, that Depends names no LibTorch, that
# `hippie-plan --version` answers and that `hippie-studio --screenshot` writes a PNG.
# Usage: test_deb.sh BUILD_DIR
set -euo pipefail
build="$(cd "${1:?usage: test_deb.sh BUILD_DIR}" && pwd)"

fail() { echo "FAIL: $*" >&2; exit 1; }
command -v cpack >/dev/null || fail "cpack not found"
command -v dpkg-deb >/dev/null || fail "dpkg-deb not found (package dpkg)"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# -- build the package ----------------------------------------------------------------------
cpack --config "$build/CPackConfig.cmake" -B "$tmp/pkg" -D "CPACK_COMPONENTS_ALL=studio;Unspecified" \
  >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log" >&2; fail "cpack failed"; }
debs=("$tmp"/pkg/hippie-studio_*.deb)
[[ -f "${debs[0]}" ]] || { cat "$tmp/cpack.log" >&2; fail "no hippie-studio_*.deb in $tmp/pkg"; }
[[ ${#debs[@]} -eq 1 ]] || fail "more than one studio package: ${debs[*]}"
deb="${debs[0]}"
[[ -z "$(ls "$tmp"/pkg/hippie-engine_*.deb 2>/dev/null)" ]] || fail "the engine package was built too"
echo "package: $(basename "$deb")"

# -- control fields ---------------------------------------------------------------------------
[[ "$(dpkg-deb -f "$deb" Package)" == hippie-studio ]] || fail "Package is not hippie-studio"
depends="$(dpkg-deb -f "$deb" Depends)"
echo "Depends: $depends"
[[ -n "$depends" ]] || fail "empty Depends"
if grep -qi torch <<<"$depends"; then fail "the studio package depends on LibTorch: $depends"; fi
for pkg in libqt6widgets6 libqt6svg6 libqcustomplot2.1-qt6 libgvc6 libcgraph6 libglpk40; do
  grep -qw -- "$pkg" <<<"$depends" || fail "Depends lacks $pkg"
done

# apt resolves the package's Depends against this Debian's archive (a simulation: nothing is
# installed). Skipped when apt has no package lists (apt-get update never ran).
apt_resolves() {
  local deb=$1
  if ! command -v apt-get >/dev/null || [[ -z "$(apt-cache policy libqt6core6 2>/dev/null | grep -m1 Candidate | grep -v none)" ]]; then
    echo "apt simulation skipped: no apt package lists"
    return 0
  fi
  apt-get install --simulate "$deb" >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; fail "apt cannot install $(basename "$deb")"; }
  grep -q "^Inst $(dpkg-deb -f "$deb" Package) " "$tmp/apt.log" || { cat "$tmp/apt.log" >&2; fail "apt would not install $(basename "$deb")"; }
  echo "apt resolves $(basename "$deb")"
}
apt_resolves "$deb"

# -- files -----------------------------------------------------------------------------------
root="$tmp/root"
dpkg-deb -x "$deb" "$root"
for f in usr/bin/hippie-studio usr/bin/hippie-plan \
         usr/share/applications/hippie-studio.desktop \
         usr/share/icons/hicolor/scalable/apps/hippie-studio.svg \
         usr/share/metainfo/io.hippie.Studio.metainfo.xml \
         usr/share/man/man1/hippie-studio.1 usr/share/man/man1/hippie-plan.1 \
         usr/share/hippie-studio/schemas/graph.schema.json usr/share/hippie-studio/schemas/cluster.schema.json \
         usr/share/hippie-studio/schemas/plan.schema.json usr/share/hippie-studio/schemas/trace.schema.json \
         usr/share/hippie-studio/examples/tiny-mlp.graph.json usr/share/hippie-studio/examples/two-node.cluster.json; do
  [[ -s "$root/$f" ]] || fail "missing from the package: /$f"
done
[[ -x "$root/usr/bin/hippie-studio" && -x "$root/usr/bin/hippie-plan" ]] || fail "binaries not executable"
[[ ! -e "$root/usr/bin/hippie-engine" ]] || fail "hippie-engine is in the studio package"
grep -qx 'Exec=hippie-studio' "$root/usr/share/applications/hippie-studio.desktop" || fail "desktop entry Exec"
grep -qx 'Icon=hippie-studio' "$root/usr/share/applications/hippie-studio.desktop" || fail "desktop entry Icon"

# Man pages format without warnings; the AppStream metadata validates (when the tools exist).
if command -v groff >/dev/null; then
  for page in "$root"/usr/share/man/man1/*.1; do
    warnings="$(groff -man -ww -z "$page" 2>&1)"
    [[ -z "$warnings" ]] || fail "groff warnings in $(basename "$page"): $warnings"
  done
fi
if command -v appstreamcli >/dev/null; then
  appstreamcli validate --no-net "$root/usr/share/metainfo/io.hippie.Studio.metainfo.xml" >"$tmp/appstream.log" 2>&1 \
    || { cat "$tmp/appstream.log" >&2; fail "appstreamcli validate"; }
fi

# -- run from the scratch root ---------------------------------------------------------------
version="$("$root/usr/bin/hippie-plan" --version)" || fail "hippie-plan --version failed"
[[ "$version" =~ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "hippie-plan --version printed '$version'"
echo "hippie-plan --version: $version"
"$root/usr/bin/hippie-plan" simulate --model "$root/usr/share/hippie-studio/examples/tiny-mlp.graph.json" \
  --cluster "$root/usr/share/hippie-studio/examples/two-node.cluster.json" --pp 2 --dp 2 --microbatches 4 \
  --global-batch 32 --schedule hippie --json >/dev/null || fail "hippie-plan simulate on the installed examples"

cd "$tmp"
QT_QPA_PLATFORM=offscreen timeout 90 "$root/usr/bin/hippie-studio" --model gpt2-small --cluster dgx-a100-1x8 \
  --global-batch 64 --run-planners data-parallel --screenshot out.png >"$tmp/studio.log" 2>&1 \
  || { cat "$tmp/studio.log" >&2; fail "hippie-studio --screenshot failed"; }
[[ -s out.png ]] || fail "the screenshot out.png is empty or missing"
[[ "$(head -c 8 out.png | od -An -tx1 | tr -d ' \n')" == 89504e470d0a1a0a ]] || fail "out.png is not a PNG"
echo "screenshot: $(stat -c %s out.png) bytes"

# -- the agent's package (when hippie-agent was built) ----------------------------------------
if [[ -x "$build/bin/hippie-agent" ]]; then
  cpack --config "$build/CPackConfig.cmake" -B "$tmp/agentpkg" -D "CPACK_COMPONENTS_ALL=agent" \
    >"$tmp/cpack-agent.log" 2>&1 || { cat "$tmp/cpack-agent.log" >&2; fail "cpack (agent) failed"; }
  adebs=("$tmp"/agentpkg/hippie-agent_*.deb)
  [[ -f "${adebs[0]}" ]] || { cat "$tmp/cpack-agent.log" >&2; fail "no hippie-agent_*.deb"; }
  adeb="${adebs[0]}"
  adepends="$(dpkg-deb -f "$adeb" Depends)"
  echo "agent Depends: $adepends"
  if grep -qiE 'torch|widgets|qcustomplot|gvc' <<<"$adepends"; then fail "the agent package pulls in GUI or LibTorch: $adepends"; fi
  grep -qw libqt6network6 <<<"$adepends" || fail "agent Depends lacks libqt6network6"
  apt_resolves "$adeb"
  aroot="$tmp/agentroot"
  dpkg-deb -x "$adeb" "$aroot"
  for f in usr/bin/hippie-agent usr/share/man/man1/hippie-agent.1 usr/lib/systemd/system/hippie-agent.service \
           etc/default/hippie-agent; do
    [[ -s "$aroot/$f" ]] || fail "missing from the agent package: /$f"
  done
  dpkg-deb --ctrl-tarfile "$adeb" | tar -xO ./conffiles | grep -qx /etc/default/hippie-agent \
    || fail "/etc/default/hippie-agent is not a conffile"
  grep -q '^ExecStart=/usr/bin/hippie-agent ' "$aroot/usr/lib/systemd/system/hippie-agent.service" || fail "unit ExecStart"
  if command -v systemd-analyze >/dev/null && [[ -d /run/systemd/system ]]; then
    # Verify the unit as installed (ExecStart's binary must exist: point it at the scratch root).
    sed "s|/usr/bin/hippie-agent|$aroot/usr/bin/hippie-agent|" "$aroot/usr/lib/systemd/system/hippie-agent.service" \
      >"$tmp/hippie-agent.service"
    systemd-analyze verify "$tmp/hippie-agent.service" >"$tmp/analyze.log" 2>&1 || { cat "$tmp/analyze.log" >&2; fail "systemd-analyze verify"; }
  fi
  # The installed agent starts, listens on a free loopback port and stops on SIGTERM.
  printf 'deb-test-token\n' >"$tmp/token"
  chmod 600 "$tmp/token"
  "$aroot/usr/bin/hippie-agent" --listen 127.0.0.1:0 --token-file "$tmp/token" --work-dir "$tmp/agentwork" \
    >"$tmp/agent.out" 2>"$tmp/agent.err" &
  apid=$!
  for _ in $(seq 50); do grep -q '"listening"' "$tmp/agent.out" && break; sleep 0.1; done
  grep -q '"listening"' "$tmp/agent.out" || { cat "$tmp/agent.err" >&2; kill $apid 2>/dev/null; fail "the installed hippie-agent did not start listening"; }
  kill -TERM $apid; wait $apid || fail "hippie-agent did not exit cleanly on SIGTERM"
  echo "agent package: $(basename "$adeb")"
fi
echo "PASS"
