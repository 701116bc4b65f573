// Bundles the extension (Node, `vscode` external) and the chat page (browser IIFE) into dist/.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync } from 'node:fs';

const production = process.argv.includes('--production');
const common = { bundle: true, sourcemap: !production, minify: production, logLevel: 'warning' };

await Promise.all([
  build({ ...common, entryPoints: ['src/extension.ts'], outfile: 'dist/extension.js',
    platform: 'node', format: 'cjs', target: 'node20', external: ['vscode'] }),
  build({ ...common, entryPoints: ['webview/chat.ts'], outfile: 'dist/webview/chat.js',
    platform: 'browser', format: 'iife', target: 'chrome120' }),
]);
mkdirSync('dist/webview', { recursive: true });
copyFileSync('webview/chat.css', 'dist/webview/chat.css');
