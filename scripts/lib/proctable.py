"""The processes now, read from /proc: the one reader of the soak's sampler and the agents
bench's CPU count."""
import os


def read():
    """{pid: (fields, command)}: each process's /proc/PID/stat fields after its name (fields[1]
    is the parent's pid, 11 and 12 user and system ticks, 19 the start time) and its command
    line, arguments joined by spaces. A process that ended while being read is left out."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                command = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(entry)] = (stat[stat.rindex(")") + 2:].split(), command)
    return out
