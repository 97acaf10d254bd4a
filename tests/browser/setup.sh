#!/usr/bin/env bash
# Installs what the browser test needs, and nothing that is already there.
# Idempotent; quick when everything is installed. Never downloads a browser build of
# its own: Playwright drives Debian's Chromium.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if [ ! -x /usr/bin/chromium ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium chromium-driver >/dev/null
fi

if [ ! -d "$here/node_modules/playwright-core" ]; then
  # PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: playwright-core has no install hook today, but make
  # sure no future version fetches a browser behind our back.
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix "$here" --no-audit --no-fund --loglevel=error
fi
