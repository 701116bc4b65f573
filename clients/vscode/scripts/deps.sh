#!/usr/bin/env bash
# Install the Debian packages the client tests need, only when missing (we run as root).
#   deps.sh chromium          -> headless Chromium for the webview page test
#   deps.sh e2e               -> + ripgrep and the build tools code-server's native modules need
set -euo pipefail
pkgs=(chromium)
[ "${1:-}" = e2e ] && pkgs+=(ripgrep build-essential pkg-config libkrb5-dev libsecret-1-dev python3)
need=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
