# Shared set-up for the scripts: find Swift, install missing Debian packages.
# Sourced, not run. Every script calls `vitals_bootstrap PACKAGE...`.

# The system packages every build needs (headers of the C libraries, pkg-config).
VITALS_BUILD_PACKAGES="libcurl4-openssl-dev libsqlite3-dev libssl-dev libxml2-dev pkg-config"

vitals_say() { printf '%s: %s\n' "${VITALS_SCRIPT:-vitals}" "$*" >&2; }

# Installs the named Debian packages that are missing: with apt-get when running as
# root, otherwise prints the one command to run and exits 2.
vitals_bootstrap() {
    local missing=() package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        if ! command -v apt-get >/dev/null 2>&1; then
            vitals_say "missing packages: ${missing[*]} (no apt-get here; install them with your package manager)"
            exit 2
        fi
        if [ "$(id -u)" -ne 0 ]; then
            vitals_say "missing packages; run this once, then try again:"
            printf '    sudo apt-get install -y %s\n' "${missing[*]}" >&2
            exit 2
        fi
        vitals_say "installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        if ! apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; then
            apt-get update -q >/dev/null
            apt-get install -y -q "${missing[@]}" >/dev/null
        fi
    fi
    if ! command -v swift >/dev/null 2>&1; then
        # Not on PATH: try SWIFT_HOME, then the usual toolchain prefixes.
        local prefix
        for prefix in "${SWIFT_HOME:-}" /opt/swift /usr/share/swift "$HOME/.local/share/swiftly/toolchains/current"; do
            if [ -n "$prefix" ] && [ -x "$prefix/usr/bin/swift" ]; then
                export PATH="$prefix/usr/bin:$PATH"
                break
            fi
        done
        if ! command -v swift >/dev/null 2>&1; then
            vitals_say "Swift 6 is needed and was not found; install it from https://www.swift.org/install/ (or set SWIFT_HOME)"
            exit 2
        fi
    fi
}
