#!/bin/sh
# A desktop for notify's desktop:// test: Xvfb, a D-Bus session bus, and dunst as the
# notification daemon, with a rule that records every notification it shows (app name,
# summary, body, urgency) in WORKDIR/shown, and its category (the hint notify-send's
# --category sets) in WORKDIR/categories. Runs COMMAND inside, then waits for the
# record (bounded) and exits with COMMAND's status. Everything it starts is ended with
# SIGKILL: a test runner's children may inherit SIGTERM blocked.
# Usage: desktop_session.sh WORKDIR COMMAND [ARGUMENT...]
set -eu
work=$1
shift
pids=
cleanup() {
    for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT
wait_for() {  # wait_for WHAT TEST...: polls the condition itself, at most 20 s
    what=$1
    shift
    tries=0
    until "$@"; do
        tries=$((tries + 1))
        if [ $tries -gt 400 ]; then echo "$what did not start" >&2; exit 3; fi
        sleep 0.05
    done
}
# Xvfb picks a free display and writes its number to fd 3 once it accepts clients.
Xvfb -displayfd 3 -nolisten tcp 3>"$work/display" >"$work/xvfb.log" 2>&1 &
pids="$pids $!"
wait_for Xvfb test -s "$work/display"
DISPLAY=":$(head -n 1 "$work/display")"
export DISPLAY
dbus-daemon --session --fork --nopidfile --print-address=3 --print-pid=4 3>"$work/bus-address" 4>"$work/bus-pid" >/dev/null 2>&1
wait_for dbus-daemon test -s "$work/bus-pid"
pids="$pids $(head -n 1 "$work/bus-pid")"
wait_for dbus-daemon test -s "$work/bus-address"
DBUS_SESSION_BUS_ADDRESS=$(head -n 1 "$work/bus-address")
export DBUS_SESSION_BUS_ADDRESS
# With DESKTOP_DMENU set, dunst's context menu (dunstctl context) asks that command which
# action to invoke: it reads the menu's lines and prints the chosen one.
cat >"$work/dunstrc" <<CONFIG
[global]
    monitor = 0
    dmenu = ${DESKTOP_DMENU:-/usr/bin/dmenu}
[record]
    appname = vitals
    script = $work/record.sh
CONFIG
cat >"$work/record.sh" <<'SCRIPT'
#!/bin/sh
printf '%s\n' "${DUNST_CATEGORY:-}" >>"$(dirname "$0")/categories"
printf '%s|%s|%s|%s\n' "$1" "$2" "$3" "$5" >>"$(dirname "$0")/shown"
SCRIPT
chmod +x "$work/record.sh"
dunst -config "$work/dunstrc" >"$work/dunst.log" 2>&1 </dev/null &
pids="$pids $!"
dunst_ready() {
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus.NameHasOwner string:org.freedesktop.Notifications 2>/dev/null | grep -q true
}
wait_for dunst dunst_ready
status=0
"$@" || status=$?
tries=0
# dunst forks record.sh when it shows a notification; on a loaded machine that can come well
# after the command ended (a full parallel test run once took it past 10 s), so the bound is 60 s.
until [ -s "$work/shown" ] || [ $tries -gt 1200 ]; do tries=$((tries + 1)); sleep 0.05; done
exit $status
