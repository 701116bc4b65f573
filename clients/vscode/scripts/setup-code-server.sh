#!/usr/bin/env bash
# Install code-server (VS Code 1.100.3 for Node 20) offline-safe into $E2E_HOME, once.
# Only the npm and Debian registries are reached: everything is installed with --ignore-scripts
# and code-server's postinstall steps are replayed by hand (see ../../../../shared/vscode-e2e/
# README.md for why each step is needed).
set -euo pipefail
E2E_HOME=${E2E_HOME:-/opt/topicforest-e2e}
CS_VERSION=${CS_VERSION:-4.100.3}    # last code-server whose engines.node is 20
STAMP="$E2E_HOME/.installed-$CS_VERSION"
[ -f "$STAMP" ] && exit 0

"$(dirname "$0")/deps.sh" e2e
export npm_config_nodedir=/usr npm_config_yes=true npm_config_update_notifier=false \
  npm_config_fund=false npm_config_audit=false
unset npm_config_build_from_source || true
mkdir -p "$E2E_HOME"
LOG="$E2E_HOME/setup.log"
: > "$LOG"
run() { echo "+ $*" >>"$LOG"; "$@" >>"$LOG" 2>&1 || { echo "FAILED: $* (see $LOG)"; tail -30 "$LOG"; exit 1; }; }
echo "installing code-server $CS_VERSION into $E2E_HOME (about a minute; log: $LOG)"
cd "$E2E_HOME"
[ -f package.json ] || echo '{ "name": "topicforest-e2e", "private": true }' > package.json
run npm install --ignore-scripts --save-exact "code-server@$CS_VERSION"
run npm rebuild argon2 --build-from-source --foreground-scripts
cd "$E2E_HOME/node_modules/code-server/lib/vscode"
run npm install --omit=dev --ignore-scripts
mkdir -p node_modules/@vscode/ripgrep/bin
cp /usr/bin/rg node_modules/@vscode/ripgrep/bin/rg   # its postinstall would download rg
run env npm_config_build_from_source=kerberos npm rebuild --foreground-scripts
ln -sfn node_modules node_modules.asar
ln -sfn code-linux.sh bin/remote-cli/code-server
ln -sfn browser-linux.sh bin/helpers/browser.sh
cd extensions
run npm install --omit=dev --foreground-scripts
cd "$E2E_HOME/node_modules/code-server/lib/vscode"
run node -e 'for (const m of ["@vscode/spdlog","node-pty","native-watchdog","@parcel/watcher"]) require(m)'
touch "$STAMP"
echo "code-server ready"
