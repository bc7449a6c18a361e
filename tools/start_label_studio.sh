#!/usr/bin/env bash
# Start a throw-away Label Studio on 127.0.0.1 (SQLite, a temporary data folder) for the labelling
# round-trip test (tests/test_label_studio.py), and print the variables the test reads:
#
#     eval "$(tools/start_label_studio.sh)"      # then: python -m pytest tests/test_label_studio.py
#     kill "$FASTSLOW_LABEL_STUDIO_PID"          # when done
#
# Label Studio and its SDK live in their own venv ($LABEL_STUDIO_VENV, default
# ~/.cache/fastslow/label-studio-venv, created on first use): they pin numpy < 2.3 (through
# opencv-python-headless) and pyarrow < 25, which must not change the versions the model runs with.
# Everything but the final `export` line goes to standard error.
#
# Label Studio builds its SQLite database with ~400 migrations, 25 s of CPU; the first run keeps an
# empty migrated database beside the venv (made by `label-studio init`) and every run starts from a copy.
# Nothing is sent off this machine: the version check, analytics and error reports are switched off.
set -euo pipefail

VENV=${LABEL_STUDIO_VENV:-$HOME/.cache/fastslow/label-studio-venv}
PORT=${LABEL_STUDIO_PORT:-8089}
PYTHON=${PYTHON:-python3}
LS_VERSION=${LABEL_STUDIO_VERSION:-1.23.2}
SDK_VERSION=${LABEL_STUDIO_SDK_VERSION:-2.1.2}

if [ ! -x "$VENV/bin/label-studio" ]; then
    started=$(date +%s)
    "$PYTHON" -m venv "$VENV" >&2
    "$VENV/bin/pip" install -q "label-studio==$LS_VERSION" "label-studio-sdk==$SDK_VERSION" >&2
    echo "label studio: installed into $VENV in $(( $(date +%s) - started ))s" >&2
fi

token() { "$PYTHON" -c 'import secrets; print(secrets.token_hex(20))'; }

export DJANGO_DB=sqlite LATEST_VERSION_CHECK=false COLLECT_ANALYTICS=false SENTRY_DSN= FRONTEND_SENTRY_DSN= \
    LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true

EMPTY="$VENV/fastslow-empty-$LS_VERSION.sqlite3"
if [ ! -f "$EMPTY" ]; then
    started=$(date +%s)
    INIT=$(mktemp -d "${TMPDIR:-/tmp}/label-studio-init.XXXXXX")
    # init wants a first user: one with a password nobody keeps
    LABEL_STUDIO_BASE_DATA_DIR="$INIT" "$VENV/bin/label-studio" init --no-browser --data-dir "$INIT" --enable-legacy-api-token \
        --username "nobody@example.com" --password "$(token)" \
        </dev/null >"$INIT/init.log" 2>&1 || { tail -n 40 "$INIT/init.log" >&2; exit 1; }
    cp "$INIT/label_studio.sqlite3" "$EMPTY.partial" && mv "$EMPTY.partial" "$EMPTY"
    rm -rf "$INIT"
    echo "label studio: migrated an empty database in $(( $(date +%s) - started ))s" >&2
fi

DATA=$(mktemp -d "${TMPDIR:-/tmp}/label-studio.XXXXXX")
cp "$EMPTY" "$DATA/label_studio.sqlite3"
TOKEN=$(token)
started=$(date +%s)
LABEL_STUDIO_BASE_DATA_DIR="$DATA" \
    nohup "$VENV/bin/label-studio" start --no-browser --internal-host 127.0.0.1 --port "$PORT" \
    --data-dir "$DATA" --username "fastslow@example.com" --password "$TOKEN" --user-token "$TOKEN" \
    --enable-legacy-api-token --log-level WARNING </dev/null >"$DATA/label-studio.log" 2>&1 &
PID=$!

for _ in $(seq 1 900); do   # bounded: three minutes at most
    if curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then
        echo "label studio: up on 127.0.0.1:$PORT in $(( $(date +%s) - started ))s (pid $PID, data $DATA)" >&2
        echo "export FASTSLOW_LABEL_STUDIO_URL=http://127.0.0.1:$PORT FASTSLOW_LABEL_STUDIO_TOKEN=$TOKEN" \
             "FASTSLOW_LABEL_STUDIO_PYTHON=$VENV/bin/python FASTSLOW_LABEL_STUDIO_PID=$PID"
        exit 0
    fi
    if ! kill -0 "$PID" 2>/dev/null; then break; fi
    sleep 0.2
done
echo "label studio: did not start; its log:" >&2
tail -n 40 "$DATA/label-studio.log" >&2
kill "$PID" 2>/dev/null || true
exit 1
