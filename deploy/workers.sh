#!/usr/bin/env bash
# Several `taverna serve` workers on one PostgreSQL and one Redis, behind nginx.
#
#   TAVERNA_DATABASE_URL=postgresql+psycopg://USER@HOST:5432/DB deploy/workers.sh [options] [-- serve options]
#
#   --workers N        workers to start (default: one per core)
#   --port P           where nginx listens (default 8000); the workers take P+1 .. P+N on 127.0.0.1
#   --listen ADDR      nginx's address (default 127.0.0.1; 0.0.0.0 for everyone on the network)
#   --data DIR         the data folder every worker shares: the server key that encrypts API
#                      keys, secrets.json, backups (default: $TAVERNA_DATA or ./taverna-data)
#   --redis URL        default: $TAVERNA_REDIS_URL or redis://127.0.0.1:6379/0 (started here when
#                      it is down and redis-server is installed)
#   anything after --  goes to every `taverna serve` (e.g. -- --accounts --allow-host chat.example.org)
#
# Workers start one after the other (the first one migrates the database and seeds a new
# library). nginx spreads requests over them with no stickiness: any worker can follow, stop
# or replay a generation another started. nginx appends the client's address to
# X-Forwarded-For, and the workers trust that header from 127.0.0.1 alone (--trust-proxy),
# so the login limits count each real client, not nginx. Ctrl-C stops everything this
# script started.
set -euo pipefail

workers="$(nproc 2>/dev/null || echo 2)"
port=8000
listen=127.0.0.1
data="${TAVERNA_DATA:-$PWD/taverna-data}"
redis_url="${TAVERNA_REDIS_URL:-redis://127.0.0.1:6379/0}"
serve_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --workers) workers="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --listen) listen="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --redis) redis_url="$2"; shift 2 ;;
    --) shift; serve_args=("$@"); break ;;
    *) echo "unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
done
case "${TAVERNA_DATABASE_URL:-}" in
  postgresql*) ;;
  *) echo "set TAVERNA_DATABASE_URL to the PostgreSQL database the workers share" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "$0")/.." && pwd)"
taverna="${TAVERNA_BIN:-$here/.venv/bin/taverna}"
[ -x "$taverna" ] || taverna="$(command -v taverna)"
mkdir -p "$data"
run="$data/run"
mkdir -p "$run"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# Redis: started here (not persisted: it holds only runs in flight) when it is down.
redis_host="$(echo "$redis_url" | sed -E 's#^redis://([^:/]*).*#\1#')"
redis_port="$(echo "$redis_url" | sed -nE 's#^redis://[^:/]*:([0-9]+).*#\1#p')"
redis_port="${redis_port:-6379}"
if ! (exec 3<>"/dev/tcp/$redis_host/$redis_port") 2>/dev/null; then
  command -v redis-server >/dev/null || { echo "Redis is down at $redis_url and redis-server is not installed" >&2; exit 1; }
  redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
    --logfile "$run/redis.log" &
  pids+=("$!")
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/$redis_host/$redis_port") 2>/dev/null && break; sleep 0.1; done
fi

upstream=""
for i in $(seq 1 "$workers"); do
  p=$((port + i))
  "$taverna" serve --host 127.0.0.1 --port "$p" --data "$data" --redis "$redis_url" \
    --trust-proxy 127.0.0.1 "${serve_args[@]}" >"$run/worker-$i.log" 2>&1 &
  pids+=("$!")
  for _ in $(seq 600); do
    curl -fsS "http://127.0.0.1:$p/api/health" >/dev/null 2>&1 && break
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$run/worker-$i.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "worker $i: http://127.0.0.1:$p/ (log: $run/worker-$i.log)"
  upstream+="    server 127.0.0.1:$p;"$'\n'
done

# nginx: any worker answers any request; streams (SSE) pass unbuffered.
cat >"$run/nginx.conf" <<EOF
pid $run/nginx.pid;
error_log $run/nginx-error.log;
worker_processes 1;
events { worker_connections 4096; }
http {
  access_log off;
  client_max_body_size 1100m;
  upstream taverna {
$upstream    keepalive 64;
  }
  server {
    listen $listen:$port;
    location / {
      proxy_pass http://taverna;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Real-IP \$remote_addr;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 1h;
    }
  }
}
EOF
if command -v nginx >/dev/null; then
  nginx -c "$run/nginx.conf" -g "daemon off;" &
  pids+=("$!")
  echo "taverna is running at http://$listen:$port/ ($workers workers behind nginx)"
else
  echo "nginx is not installed: its config is $run/nginx.conf; the workers answer directly"
fi
wait -n "${pids[@]}"
