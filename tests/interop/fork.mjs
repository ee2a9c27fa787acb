#!/usr/bin/env node
// Fork a stored session with the REAL dsh SessionStore.fork and persist the child with the REAL
// JSONL persistence — the oracle for dsh-tui's fork (tests/interop/fork_peer.py copies this file
// into the installed peer directory and runs it there with the peer's Node 22).
//
//   node fork.mjs --root DIR --id PARENT --child CHILD [--boundary SEQ] [--compression zstd|none]
//
// The parent is read with persistence.inspect() (no repair, no write) and made live in a Context
// WITHOUT persistence, so its constructor's session/end-seed never reaches the parent's file. dsh's
// `ctx.sessions.fork(parent, boundary?, child)` builds the child there; the child (seed + end-seed)
// is then created in the Context WITH persistence, which writes header + seed + end-seed as the
// child's first batch — what the web host's fork writes.
// Prints one JSON line: {id, seedLength} or {error, code} (exit 1).

import { Context } from '@deepseek-ai/cordis'
import SessionStore, { SessionId } from '@deepseek-ai/dsh-session'
import { resolve } from 'node:path'
import { assertRuntime, boot, die, parseArgs } from './lib.mjs'

async function main() {
  assertRuntime()
  const args = parseArgs(process.argv.slice(2))
  if (!args.root || !args.id || !args.child) die('usage: node fork.mjs --root DIR --id PARENT --child CHILD [--boundary SEQ]')
  const { ctx, persistence, dispose } = await boot('jsonl', { root: resolve(args.root), compression: args.compression ?? 'zstd' })
  try {
    const parent = await persistence.inspect(SessionId(String(args.id)))
    const host = new Context()
    await host.plugin(SessionStore)
    const { version: _v, id: _i, ...meta } = parent.meta
    const live = host.sessions.create(SessionId(String(args.id)), { seed: parent.events, meta })
    let child
    try {
      const boundary = args.boundary === undefined ? undefined : Number(args.boundary)
      child = host.sessions.fork(live, boundary, SessionId(String(args.child)))
    } catch (e) {
      process.stdout.write(JSON.stringify({ error: e.message, code: e.code ?? null }) + '\n')
      process.exitCode = 1
      return
    }
    const { version: _cv, id: _ci, ...childMeta } = child.header
    const persisted = ctx.sessions.create(child.id, { seed: child.events, meta: childMeta })
    await ctx.sessions.flush(persisted)
    process.stdout.write(JSON.stringify({ id: child.id, seedLength: child.header.seedLength }) + '\n')
  } finally {
    await dispose()
  }
}

main().catch((e) => { process.stderr.write(`${e?.stack ?? e}\n`); process.exit(2) })
