#!/usr/bin/env bash
# Checks that the tools make test needs are here, before any test runs, and
# says in one line each what is missing, what it is for and how to get it
# (README.md, Development). Exit status 1 when anything is missing.
set -u

missing=0
need() { # need CHECK-COMMAND LINE
  if ! eval "$1" >/dev/null 2>&1; then
    echo "missing: $2" >&2
    missing=1
  fi
}

need 'command -v go' 'go (Go 1.26): builds and tests everything; https://go.dev/dl/'
need 'command -v bash' 'bash: runs the README shell examples; apt-get install bash'
need 'command -v curl' 'curl: the README shell examples send mail and call the API with it; apt-get install curl'
need 'command -v jq' 'jq: the README shell examples read JSON with it; apt-get install jq'
if command -v node >/dev/null 2>&1; then
  need 'node -e "process.exit(Number(process.versions.node.split(\".\")[0]) >= 20 ? 0 : 1)"' \
    "Node.js 20 or newer (this is $(node --version)): the end-to-end suite and the README JavaScript examples; apt-get install nodejs"
else
  echo 'missing: node (Node.js 20 or newer): the end-to-end suite and the README JavaScript examples; apt-get install nodejs npm' >&2
  missing=1
fi
need 'command -v npm' 'npm: installs the end-to-end suite'"'"'s dependencies (e2e/package-lock.json); apt-get install npm'
chromium=${CATCHBOX_CHROMIUM:-/usr/bin/chromium}
need "[ -x '$chromium' ]" "chromium at $chromium: the dashboard's browser tests; apt-get install chromium, or set CATCHBOX_CHROMIUM to its path"
if [ -n "${CATCHBOX_TEST_POSTGRES_URL:-}" ]; then
  need 'command -v psql' 'psql: CATCHBOX_TEST_POSTGRES_URL is set, and the client tests make their PostgreSQL schemas with psql; apt-get install postgresql-client'
fi

if [ "$missing" -ne 0 ]; then
  echo "make test needs the tools above (README.md, Development)." >&2
  exit 1
fi
