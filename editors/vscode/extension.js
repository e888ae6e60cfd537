// The kir extension: the `kir` language (grammar and editing rules come from package.json) and a
// client for the kir language server, `kir lsp`, spoken to over stdin/stdout.
//
// Settings: `kir.serverPath` (the kir executable, default `kir` on PATH), `kir.trace.server`.
// Command: `kir: Restart the language server` (kir.restartServer), also run when kir.serverPath
// changes.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

/** @type {LanguageClient | undefined} */
let client;

function serverOptions() {
  const command = vscode.workspace.getConfiguration('kir').get('serverPath') || 'kir';
  // No `transport`: the client then talks to the process over its stdin/stdout without adding a
  // `--stdio` argument, which is what `kir lsp` expects.
  const exe = { command, args: ['lsp'] };
  return { run: exe, debug: exe };
}

async function start() {
  const clientOptions = {
    documentSelector: [
      { scheme: 'file', language: 'kir' },
      { scheme: 'untitled', language: 'kir' },
    ],
    outputChannelName: 'kir language server',
  };
  client = new LanguageClient('kir', 'kir language server', serverOptions(), clientOptions);
  try {
    await client.start();
  } catch (err) {
    const command = serverOptions().run.command;
    vscode.window.showErrorMessage(
      `kir: could not start the language server (\`${command} lsp\`): ${err && err.message ? err.message : err}. ` +
        'Install kir (`cargo install --path .` in the kir repository) or set `kir.serverPath`.'
    );
  }
}

async function stop() {
  if (client) {
    const c = client;
    client = undefined;
    try {
      await c.stop();
    } catch (_) {
      // It may never have started.
    }
  }
}

async function restart() {
  await stop();
  await start();
}

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('kir.restartServer', restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('kir.serverPath')) {
        restart();
      }
    }),
    { dispose: () => stop() }
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
