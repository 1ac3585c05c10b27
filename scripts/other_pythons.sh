#!/usr/bin/env bash
# Make CPython 3.12 and 3.13 available as python3.12 / python3.13 on PATH.
#
# On this machine kind the interpreters come with the machine image, under
# pyenv (/root/.pyenv/versions/3.12.x, 3.13.x, full stdlib). Nothing is
# downloaded: apt (bookworm) has no 3.12/3.13, PyPI has no CPython binary
# wheel, and uv/pyenv installs need GitHub/python.org, which are unreachable.
# This script links the image's interpreters into /opt/pythons/<minor> and
# /usr/local/bin. Idempotent; never fails hard (always exits 0).
set -u

PYENV_ROOT="${PYENV_ROOT:-$HOME/.pyenv}"
DEST=/opt/pythons
BIN=/usr/local/bin
CHECK='import ast, tokenize, hashlib, importlib, pathlib, json, sys; print(sys.version.split()[0])'

find_interp() {  # $1 = minor, e.g. 3.12; prints a working interpreter path or nothing
    local minor=$1 cand d
    # 1. already set up by an earlier run
    cand="$DEST/$minor/bin/python$minor"
    # 2. pyenv versions in the image (newest patch first)
    for d in $(ls -d "$PYENV_ROOT"/versions/"$minor".* /root/.pyenv/versions/"$minor".* 2>/dev/null | sort -rV); do
        case "$d" in *t|*dev*) continue ;; esac
        cand="$cand $d/bin/python$minor"
    done
    # 3. any other interpreter already on the system (apt, uv-managed, ...)
    cand="$cand /usr/bin/python$minor $(command -v "python$minor" 2>/dev/null || true)"
    for c in $cand; do
        if [ -x "$c" ] && "$c" -c "$CHECK" >/dev/null 2>&1; then
            echo "$c"; return 0
        fi
    done
    return 1
}

rc_msg=""
for minor in 3.12 3.13; do
    if ! py=$(find_interp "$minor"); then
        echo "other_pythons: no CPython $minor found (not in pyenv image, not from apt); skipping" >&2
        rc_msg="$rc_msg $minor"
        continue
    fi
    prefix=$(cd "$(dirname "$py")/.." && pwd -P)
    mkdir -p "$DEST" 2>/dev/null || true
    if [ "$prefix" != "$(readlink -f "$DEST/$minor" 2>/dev/null)" ]; then
        ln -sfn "$prefix" "$DEST/$minor" 2>/dev/null || true
    fi
    ln -sfn "$DEST/$minor/bin/python$minor" "$BIN/python$minor" 2>/dev/null \
        || echo "other_pythons: cannot write $BIN/python$minor (not root?)" >&2
    ver=$("$BIN/python$minor" -c "$CHECK" 2>/dev/null || "$py" -c "$CHECK")
    echo "other_pythons: python$minor -> $prefix ($ver)"
done
[ -n "$rc_msg" ] && echo "other_pythons: missing:$rc_msg (tests needing them should skip)"
exit 0
