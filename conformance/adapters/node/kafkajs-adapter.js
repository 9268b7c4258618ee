// The kafkajs adapter program: speaks the line protocol of conformance/adapters/line_protocol.py on
// stdin/stdout (one JSON line per command), drives kafkajs (node_modules/kafkajs, pinned in the
// repository's package.json) and writes kafkajs's logs to stderr (out/adapters/kafkajs.log).
//
//   -> {"cmd": "hello"}   <- {"client": "kafkajs", "version": "2.2.4", "operations": [...], "settings": {...}}
//   -> {"cmd": "run", ...} <- {"outcomes": [...]} (and "restart": true when a client was left behind)
//   -> {"cmd": "quit"}     (or EOF)
//
// Each step runs under a watchdog (args.watchdog_s, set by the Python side): kafkajs's calls cannot be
// cancelled, so a call still pending then is reported as NoReturn and its clients are left behind.
// Such a run's answer says "restart": the Python side ends this program (the clients left behind
// would otherwise keep retrying, with this adapter's client id, against the next scenario's brokers).
'use strict'

const readline = require('readline')
const { version } = require('kafkajs/package.json')
const { Clients } = require('./kafkajs-config')
const ops = require('./kafkajs-ops')
const txn = require('./kafkajs-txn')

const OPERATIONS = { ...ops.operations, ...txn.operations }
const SETTINGS = {
  'request.timeout.ms': 'requestTimeout',
  'socket.connection.setup.timeout.ms': 'connectionTimeout (TCP connect only)',
  'retry.backoff.ms': 'retry.initialRetryTime',
  'retry.backoff.max.ms': 'retry.maxRetryTime',
  retries: 'producer retry.retries',
  acks: 'send({acks})',
  'enable.idempotence': 'producer idempotent',
  'transaction.timeout.ms': 'producer transactionTimeout',
  'fetch.max.wait.ms': 'consumer maxWaitTimeInMs',
  'session.timeout.ms': 'consumer sessionTimeout',
  'heartbeat.interval.ms': 'consumer heartbeatInterval',
  'max.poll.interval.ms': 'consumer rebalanceTimeout',
  'metadata.max.age.ms': 'metadataMaxAge'
}

// kafkajs rejects some promises nobody awaits any more (a request of a client left behind): logged, not fatal
process.on('unhandledRejection', (err) => process.stderr.write(`unhandled rejection: ${err && err.stack ? err.stack : err}\n`))

async function runStep (step, ctx) {
  const op = OPERATIONS[step.kind]
  if (!op) return { operation: step.kind, ok: false, elapsed_ms: 0, error_type: 'Unsupported', error_message: `the kafkajs program has no ${step.kind}`, value: null }
  const limit = (step.args.watchdog_s || 120) * 1000
  const started = ops.now()
  const pending = op(step, ctx).catch((err) => ops.failed(step, ops.now() - started, err))
  const out = await Promise.race([pending, ops.sleep(limit).then(() => null)])
  if (out !== null) return out
  ctx.abandoned = true
  return {
    operation: step.kind,
    ok: false,
    elapsed_ms: ops.now() - started,
    error_type: 'NoReturn',
    error_message: `${step.kind}: the call had not returned ${(limit / 1000).toFixed(1)} s after it was made, when the adapter stopped waiting (kafkajs's calls take no deadline)`,
    value: null
  }
}

async function run (request) {
  const ctx = new Clients(request)
  ctx.abandoned = false
  const outcomes = []
  for (const step of request.steps) outcomes.push(await runStep(step, ctx))
  return ctx.abandoned ? { outcomes, restart: true } : { outcomes }
}

function answer (obj) {
  return new Promise((resolve) => process.stdout.write(JSON.stringify(obj) + '\n', resolve))
}

async function main () {
  const lines = readline.createInterface({ input: process.stdin, terminal: false })
  for await (const line of lines) {
    if (!line.trim()) continue
    let request
    try {
      request = JSON.parse(line)
    } catch (err) {
      await answer({ fatal: `not JSON: ${line.slice(0, 200)}` })
      continue
    }
    if (request.cmd === 'quit') break
    if (request.cmd === 'hello') {
      await answer({ client: 'kafkajs', version, operations: Object.keys(OPERATIONS).sort(), settings: SETTINGS })
    } else if (request.cmd === 'run') {
      const got = await run(request).catch((err) => ({ fatal: `run failed: ${err && err.stack ? err.stack : err}` }))
      await answer(got)
      if (got.restart) break
    } else {
      await answer({ fatal: `unknown command ${request.cmd}` })
    }
  }
  process.exit(0) // clients left behind keep timers alive: leave without them
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`)
  process.exit(2)
})
