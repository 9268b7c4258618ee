// kafkajs's transactions (producer.transaction(): kafkajs has no max.block.ms, and commit() sends
// EndTxn once, bounded by requestTimeout: producer/eosManager/index.js) and the group step
// join_group_held (kafkajs gives JoinGroup rebalanceTimeout + 5000 ms: protocol/requests/joinGroup).
// See kafkajs-ops.js for what each step times.
'use strict'

const { javaName, chain } = require('./kafkajs-errors')
const FIRST = 'txn-1' // conformance/scenarios_txn_late.py: what read_committed must not read
const SECOND = 'txn-2'
const { now, sleep, ok, failed, close, withClient, asBytes, consumeUntil, SILENT_MEMBER, HUNG, AFTER } = require('./kafkajs-ops')

async function sendOne (txn, a, value) {
  await txn.send({ topic: a.topic, acks: -1, messages: [{ value, partition: a.partition || 0 }] })
}

async function transaction (step, ctx) {
  const a = step.args
  return withClient(ctx, ctx.transactional(), async (p) => {
    let start = now()
    try {
      await p.connect() // idempotent: sends InitProducerId already (producer/index.js connect())
      if (!a.time_init) start = now()
      for (let i = 0; i < (a.count || 1); i++) {
        const txn = await p.transaction() // the first one: FindCoordinator and InitProducerId for the transactional id
        await sendOne(txn, a, 'txn')
        await sleep((a.open_s || 0) * 1000)
        start = now()
        try {
          await txn.commit()
        } catch (err) {
          if (!a.retry_commit || javaName(err) !== 'TimeoutException') throw err
          return failed(step, now() - start, err, await commitAgain(txn))
        }
      }
      return ok(step, now() - start)
    } catch (err) {
      return failed(step, now() - start, err)
    }
  })
}

// txn_abort_then_commit: a transaction whose one record (txn-1) fails is aborted, the next writes txn-2
// and commits, as kafkajs's documentation writes a transaction (send, then abort() on an error, commit()
// otherwise). Timed from the abort to the commit; the value is how the first record ended (null: delivered).
// kafkajs has no delivery.timeout.ms: the record fails when the producer's retrier gives up (5 retries, each
// bounded by requestTimeout: retry/defaults.js, as Kafka.producer() hands every producer a retry object).
// A failed attempt gives its sequence numbers back (producer/sendMessages.js: updateSequence(-n)), so the
// next transaction's record reuses the failed one's sequence with the same epoch (docs/findings.md)
async function txnAbortThenCommit (step, ctx) {
  const a = step.args
  return withClient(ctx, ctx.transactional(), async (p) => {
    let start = now()
    try {
      await p.connect()
      const first = await p.transaction()
      let outcome = null
      try {
        await sendOne(first, a, FIRST)
      } catch (err) {
        outcome = javaName(err, { transactional: true })
      }
      start = now()
      await first.abort()
      const next = await p.transaction()
      await sendOne(next, a, SECOND)
      await next.commit()
      return ok(step, now() - start, outcome)
    } catch (err) {
      return failed(step, now() - start, err)
    }
  })
}

// retry_commit: the application calls commit() again after its timeout, as Java's commitTransaction allows
async function commitAgain (txn) {
  try {
    await txn.commit()
    return 'committed when called again'
  } catch (err) {
    return `called again: ${javaName(err, { transactional: true })}: ${err.message}`
  }
}

// txn_error_probe (conformance/adapters/txn_probe.py, the same sequence): a transaction under a fault
// that answers one error; the first call that fails is recorded; once the fault is over (clear_s after
// the start, scaled by the Python side) the same call again, abort(), then a new transaction. The
// error is named as kafkajs raised it (its class, the protocol error's type, whether it says retriable).
function ownName (err) {
  const last = chain(err).pop()
  const retriable = last.retriable ? ' (retriable)' : ''
  return `${last.name}${last.type ? ` ${last.type}` : ''}${retriable}`
}

async function txnErrorProbe (step, ctx) {
  const a = step.args
  return withClient(ctx, ctx.transactional(), async (p) => {
    let txn = null
    const calls = {
      init: () => p.connect(), // InitProducerId (producer/index.js connect())
      begin: async () => { txn = await p.transaction() },
      send: () => sendOne(txn, a, 'txn'),
      commit: () => txn.commit(),
      abort: () => txn.abort()
    }
    const attempt = async (...keys) => {
      for (const key of keys) {
        try { await calls[key]() } catch (err) { return ownName(err) }
      }
      return 'ok'
    }
    const t0 = now()
    const took = {}
    let first = null
    for (const key of ['init', 'begin', 'send', 'commit']) {
      const start = now()
      try { await calls[key]() } catch (err) { first = { key, err, after: now() - start } }
      took[key] = (now() - start) / 1000
      if (first) break
    }
    if (!first) {
      const slowest = Object.keys(took).reduce((x, y) => (took[y] > took[x] ? y : x))
      return ok(step, took[slowest] * 1000, { call: null, slowest, took })
    }
    await sleep(t0 + (a.clear_s || 0) * 1000 - now())
    const retry = await attempt(first.key === 'init' ? 'init' : 'commit')
    const abort = first.key !== 'init' && retry !== 'ok' ? await attempt('abort') : null
    const next = (first.key === 'init' && retry === 'ok') || abort === 'ok' ? await attempt('begin', 'send', 'commit') : null
    const out = failed(step, first.after, first.err, { call: first.key, took, retry, abort, next })
    return { ...out, error_type: ownName(first.err) }
  })
}

async function txnZombie (step, ctx) {
  const a = step.args
  const zombie = ctx.transactional()
  const fresh = ctx.transactional(`${ctx.clientId}-new`)
  try {
    await zombie.connect()
    const old = await zombie.transaction()
    await sendOne(old, a, 'zombie')
    await fresh.connect()
    const txn = await fresh.transaction() // InitProducerId bumps the epoch: the zombie's transaction is aborted
    await sendOne(txn, a, 'fresh')
    await txn.commit()
    const start = now()
    try {
      await old.commit()
      return ok(step, now() - start)
    } catch (err) {
      return failed(step, now() - start, err)
    }
  } catch (err) {
    return failed(step, 0, err)
  } finally {
    await close(ctx, fresh)
    await close(ctx, zombie)
  }
}

async function readCommittedBehindOpenTxn (step, ctx) {
  const a = step.args
  const hung = ctx.transactional(`${ctx.clientId}-hung`)
  const plain = ctx.producer({}, `${ctx.clientId}-plain`)
  const consumer = ctx.consumer(ctx.group('read-committed'), { readUncommitted: false })
  let start = now()
  try {
    await hung.connect()
    const txn = await hung.transaction()
    await sendOne(txn, a, HUNG)
    await plain.connect()
    await plain.send({ topic: a.topic, acks: -1, messages: [{ value: AFTER, partition: a.partition || 0 }] })
    await consumer.connect()
    await consumer.subscribe({ topics: [a.topic], fromBeginning: true })
    const seen = []
    start = now()
    const ended = await consumeUntil(ctx, consumer, a, seen, () => seen.length > 0, step.timeout_ms === null ? 60000 : step.timeout_ms, start)
    const elapsed = ended - start // when the record was seen (stop() after it is not the wait)
    const out = ok(step, elapsed, seen.map(asBytes))
    if (!seen.length) Object.assign(out, { ok: false, error_type: 'TimeoutException', error_message: 'no record became visible' })
    return out
  } catch (err) {
    return failed(step, now() - start, err)
  } finally {
    await close(ctx, consumer)
    await close(ctx, plain)
    await close(ctx, hung)
  }
}

// a member of `group` that records whether its last join gave it partitions (the GROUP_JOIN event)
function member (ctx, group, clientId) {
  const consumer = ctx.consumer(group, {}, clientId)
  const state = { consumer, assigned: false }
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    state.assigned = Object.values(e.payload.memberAssignment || {}).some((parts) => parts.length > 0)
  })
  return state
}

async function joined (m, topic, limitMs) {
  const start = now()
  await m.consumer.connect()
  await m.consumer.subscribe({ topics: [topic] })
  await m.consumer.run({ autoCommit: false, eachBatch: async () => {} }) // resolves after JoinGroup and SyncGroup
  while (!m.assigned && now() - start < limitMs) await sleep(20)
  return m.assigned
}

async function joinGroupHeld (step, ctx) {
  const a = step.args
  const group = a.group || 'held'
  const limit = step.timeout_ms === null ? 60000 : step.timeout_ms
  const first = member(ctx, group, SILENT_MEMBER)
  const second = member(ctx, group, ctx.clientId)
  try {
    if (!(await joined(first, a.topic || 't', limit))) {
      return { ...failed(step, 0, new Error('the first member never got an assignment')), error_type: 'TimeoutException' }
    }
    const start = now()
    const got = await joined(second, a.topic || 't', limit)
    const elapsed = now() - start
    if (got) return ok(step, elapsed)
    return { ...failed(step, elapsed, new Error('the second member never got an assignment')), error_type: 'TimeoutException' }
  } catch (err) {
    return failed(step, 0, err)
  } finally {
    await close(ctx, second.consumer)
    await close(ctx, first.consumer)
  }
}

module.exports = {
  operations: {
    transaction,
    txn_zombie: txnZombie,
    txn_abort_then_commit: txnAbortThenCommit,
    txn_error_probe: txnErrorProbe,
    read_committed_behind_open_txn: readCommittedBehindOpenTxn,
    join_group_held: joinGroupHeld
  }
}
