#!/usr/bin/env node
// Load one session with the REAL dsh persistence and print what dsh derives from it for the model.
//
//   node messages.mjs --root DIR --id ID [--compression zstd|none]
//
// Output: one JSON line {id, events, title, messages} where messages is
// Session.fromRestore(...).deriveMessages() (dsh's own projection of the log) and title the data of the
// last session/title event. Exit status 1 if the session does not load.

import { resolve } from 'node:path'
import { Session, SessionId } from '@deepseek-ai/dsh-session'
import { assertRuntime, boot, die, parseArgs } from './lib.mjs'

async function main() {
  assertRuntime()
  const args = parseArgs(process.argv.slice(2), [])
  if (!args.root || !args.id) die('usage: node messages.mjs --root DIR --id ID [--compression zstd|none]')
  const { persistence, dispose } = await boot('jsonl', { root: resolve(args.root), compression: args.compression ?? 'zstd' })
  try {
    const id = SessionId(String(args.id))
    const loaded = await persistence.inspect(id)
    const session = Session.fromRestore(id, structuredClone(loaded.events), structuredClone(loaded.meta))
    const titles = loaded.events.filter((e) => e.type === 'session/title')
    process.stdout.write(JSON.stringify({
      id: String(args.id),
      events: loaded.events.length,
      title: titles.at(-1)?.data ?? null,
      messages: session.deriveMessages(),
    }) + '\n')
  } catch (e) {
    process.stdout.write(JSON.stringify({ id: String(args.id), error: e?.message ?? String(e) }) + '\n')
    process.exitCode = 1
  } finally {
    await dispose()
  }
}

main().catch((e) => { process.stderr.write(`${e?.stack ?? e}\n`); process.exit(2) })
