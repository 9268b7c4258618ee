// The conformance operations as kafkajs's own calls (kafkajs 2.2.4). Each step makes its clients from
// the run's config (kafkajs-config.js), times the client's call with performance.now() in this
// process, and disconnects them. A call kafkajs gives no deadline is timed as it comes; when the step
// gives one, it is the application's: the call is raced against a timer (withinDeadline), as a Node
// application gives a promise a deadline, and abandoned there (the client is disconnected as the step ends).
//
//   operation           kafkajs call                                     timed
//   produce             producer.send({topic, acks, timeout, messages})  the sends (after connect())
//                       per record; value: the last baseOffset
//   produce_pipelined   count send()s, gap_s apart, then every promise    from the first send
//   poll                consumer.subscribe + run({eachBatch}); stop()    run() to stop() returning: kafkajs
//                       at the step's deadline (kafkajs has no poll()     has no poll() and no assign(), so
//                       and no assign(): a consumer of its own group)     a consumer joins a group first
//   committed           admin.fetchOffsets({groupId, topics})           the call; value: offset or null
//   end_offsets,        admin.fetchTopicOffsets(topic): high / low      the call; {partition: offset}
//   beginning_offsets
//   offsets_for_times   admin.fetchTopicOffsetsByTimestamp(topic, ms)   the call; {partition: offset}
//   list_topics         admin.fetchTopicMetadata(): every topic          the call; sorted names
//   partitions_for      admin.fetchTopicMetadata({topics: [topic]})     the call; partition ids
//   commit_sync         consumer.commitOffsets([...]) of a member of     the commit (after the join)
//                       the step's group
//   admin_list_topics   admin.listTopics(), `repeat` times, pause_s      the last call
//   create_topics       admin.createTopics({topics, timeout}): the       the call
//                       step's deadline is CreateTopics' timeout_ms
//   delete_records      admin.deleteTopicRecords({topic, partitions})   the call (after fetchTopicOffsets
//                                                                       loaded the topic's leaders)
//   transaction         producer.transaction(), send, commit(): count   the commit (time_init: from
//                       of them; retry_commit: commit() again after a    connect(), whose InitProducerId
//                       timeout                                          an idempotent producer sends)
//   txn_zombie          a second producer of the same transactionalId   the zombie's commit()
//                       fences the first
//   txn_abort_then_commit  a transaction whose record (txn-1) fails is   from the abort to the commit;
//                       aborted, the next sends txn-2 and commits       value: how txn-1 ended (null: sent)
//   read_committed_behind_open_txn  an open transaction, a plain record  until a record is seen
//                       after it, a read-committed consumer
//   join_group_held     a first member (client id SILENT_MEMBER) joins,  the second member's run() until
//                       a second joins the same group                    its GROUP_JOIN has partitions
'use strict'

const { performance } = require('perf_hooks')
const { javaName, message } = require('./kafkajs-errors')

const SILENT_MEMBER = 'conformance-silent-member' // conformance/model.py
const HUNG = 'in the open transaction'
const AFTER = 'after it'
const TRANSACTIONAL = new Set(['transaction', 'txn_zombie', 'read_committed_behind_open_txn'])
const MIN_GAP_MS = 50 // produce_pipelined: the first Produce leaves before the second send

const now = () => performance.now()
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
const bytes = (value) => (value && typeof value === 'object' && value.$bytes !== undefined ? Buffer.from(value.$bytes, 'base64') : value)
const asBytes = (buf) => ({ $bytes: Buffer.from(buf || '').toString('base64') })

function ok (step, elapsed, value = null) {
  return { operation: step.kind, ok: true, elapsed_ms: elapsed, error_type: null, error_message: null, value }
}

function failed (step, elapsed, err, value = null) {
  const transactional = TRANSACTIONAL.has(step.kind)
  return { operation: step.kind, ok: false, elapsed_ms: elapsed, error_type: javaName(err, { transactional }), error_message: message(err), value }
}

// a disconnect that may itself wait (a consumer's stop() waits for its fetch in flight): bounded, and
// one that does not end leaves its client behind (the program asks to be restarted)
async function close (ctx, client) {
  const limit = 5000 + 3 * ctx.s.client.requestTimeout
  const done = await Promise.race([client.disconnect().then(() => true, () => true), sleep(limit).then(() => false)])
  if (!done) ctx.abandoned = true
}

async function withClient (ctx, client, body) {
  try {
    return await body(client)
  } finally {
    await close(ctx, client)
  }
}

async function produce (step, ctx) {
  const a = step.args
  return withClient(ctx, ctx.producer(), async (p) => {
    let start = now()
    try {
      await p.connect() // kafkajs's producer has no metadata call: the first send asks for the topic's
      start = now()
      let last = null
      for (let i = 0; i < (a.count || 1); i++) {
        [last] = await p.send({ topic: a.topic, acks: ctx.s.acks, timeout: ctx.s.produceTimeout, messages: [record(a)] })
      }
      return ok(step, now() - start, last ? Number(last.baseOffset) : null)
    } catch (err) {
      return failed(step, now() - start, err)
    }
  })
}

function record (a) {
  const r = { value: bytes(a.value) }
  if (a.key !== undefined && a.key !== null) r.key = bytes(a.key)
  if (a.partition !== undefined && a.partition !== null) r.partition = a.partition
  return r
}

async function producePipelined (step, ctx) {
  const a = step.args
  return withClient(ctx, ctx.producer(), async (p) => {
    let start = now()
    try {
      await p.connect()
      start = now()
      const sends = []
      for (let i = 0; i < (a.count || 2); i++) {
        const sent = p.send({ topic: a.topic, acks: ctx.s.acks, timeout: ctx.s.produceTimeout, messages: [record(a)] })
        sent.catch(() => {}) // awaited below; a rejection before then is not unhandled
        sends.push(sent)
        await sleep(Math.max((a.gap_s || 0) * 1000, MIN_GAP_MS))
      }
      const offsets = []
      for (const sent of sends) offsets.push(Number((await sent)[0].baseOffset))
      return ok(step, now() - start, offsets)
    } catch (err) {
      return failed(step, now() - start, err)
    }
  })
}

// consume `topic` on a consumer of its own group until `done()` or `limitMs` from `start`, then
// stop() it (which waits for the fetch in flight: consumer/runner.js stop()); the records of
// `partition` go to `seen`. Returns when consuming ended, before stop().
async function consumeUntil (ctx, consumer, a, seen, done, limitMs, start) {
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      if (batch.partition === (a.partition || 0)) seen.push(...batch.messages.map((m) => m.value))
    }
  })
  if (typeof a.offset === 'number') consumer.seek({ topic: a.topic, partition: a.partition || 0, offset: String(a.offset) })
  while (!done() && now() - start < limitMs) await sleep(Math.min(20, limitMs - (now() - start)))
  const ended = now()
  await consumer.stop()
  return ended
}

async function poll (step, ctx) {
  const a = step.args
  const consumer = ctx.consumer(ctx.group('poll'))
  return withClient(ctx, consumer, async (c) => {
    await c.connect()
    await c.subscribe({ topics: [a.topic], fromBeginning: a.offset !== 'latest' })
    const seen = []
    const start = now()
    try {
      await consumeUntil(ctx, c, a, seen, () => false, step.timeout_ms, start)
      return ok(step, now() - start, seen.length)
    } catch (err) {
      return failed(step, now() - start, err)
    }
  })
}

// A call kafkajs gives no deadline, abandoned at the step's: its promise raced against a timer. The call
// goes on until the client under it is disconnected, which the step does as it returns.
class AbandonedAtDeadline extends Error {
  constructor (ms) {
    super(`the application stopped waiting at the step's deadline (${ms} ms): the call takes no deadline of its own ` +
      'and was left running until the client was disconnected')
    this.name = 'AbandonedAtDeadline'
  }
}

function withinDeadline (step, promise) {
  if (step.timeout_ms === null || step.timeout_ms === undefined) return promise
  promise.catch(() => {}) // a rejection after the deadline is nobody's to read
  let timer
  const deadline = new Promise((resolve, reject) => {
    timer = setTimeout(() => reject(new AbandonedAtDeadline(step.timeout_ms)), step.timeout_ms)
  })
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer))
}

// one admin call, timed after connect() (and an untimed set-up call); the value is shaped after the clock stops.
// A step with warm_up makes the same call once first, untimed and without a deadline, on the same admin
// client (its connections up; kafkajs caches no coordinator: fetchOffsets asks FindCoordinator every time,
// cluster/index.js findGroupCoordinator)
function adminCall (call, shape = (x) => x, setUp = async () => {}) {
  return async (step, ctx) => withClient(ctx, ctx.admin(), async (admin) => {
    let start = now()
    try {
      await admin.connect()
      await setUp(admin, step.args)
      if (step.args.warm_up) await call(admin, step.args)
      start = now()
      const got = await withinDeadline(step, call(admin, step.args))
      const elapsed = now() - start
      return ok(step, elapsed, shape(got, step.args))
    } catch (err) {
      return failed(step, now() - start, err)
    }
  })
}

const byPartition = (rows, field) => Object.fromEntries(rows.map((r) => [String(r.partition), Number(r[field])]))

const committed = adminCall(
  (admin, a) => admin.fetchOffsets({ groupId: a.group || 'cg', topics: [a.topic || 't'] }),
  (got, a) => {
    const row = (got[0] || { partitions: [] }).partitions.find((p) => p.partition === (a.partition || 0))
    return row && Number(row.offset) >= 0 ? Number(row.offset) : null
  })
const endOffsets = adminCall((admin, a) => admin.fetchTopicOffsets(a.topic || 't'), (rows) => byPartition(rows, 'high'))
const beginningOffsets = adminCall((admin, a) => admin.fetchTopicOffsets(a.topic || 't'), (rows) => byPartition(rows, 'low'))
const offsetsForTimes = adminCall((admin, a) => admin.fetchTopicOffsetsByTimestamp(a.topic || 't', a.timestamp_ms || 0),
  (rows) => byPartition(rows, 'offset'))
const listTopics = adminCall((admin) => admin.fetchTopicMetadata(), (got) => got.topics.map((t) => t.name).sort())
const partitionsFor = adminCall((admin, a) => admin.fetchTopicMetadata({ topics: [a.topic || 't'] }),
  (got) => got.topics[0].partitions.map((p) => p.partitionId).sort((x, y) => x - y))
const deleteRecords = adminCall(
  (admin, a) => admin.deleteTopicRecords({ topic: a.topic, partitions: [{ partition: a.partition || 0, offset: String(a.offset ?? -1) }] }),
  () => null,
  (admin, a) => admin.fetchTopicOffsets(a.topic)) // deleteTopicRecords finds the leaders in metadata it does not load

async function createTopics (step, ctx) {
  const a = step.args
  const call = adminCall((admin) => admin.createTopics({
    topics: [{ topic: a.topic, numPartitions: a.partitions || 1, replicationFactor: a.replication_factor || 1 }],
    timeout: step.timeout_ms === null ? undefined : step.timeout_ms
  }))
  return call(step, ctx)
}

async function adminListTopics (step, ctx) {
  const a = step.args
  const rounds = a.repeat || 1
  return withClient(ctx, ctx.admin(), async (admin) => {
    let start = now()
    let topics = []
    try {
      await admin.connect()
    } catch (err) {
      return failed(step, now() - start, err)
    }
    for (let i = 0; i < rounds; i++) {
      if (i) await sleep((a.pause_s || 0) * 1000)
      start = now()
      try {
        topics = (await admin.listTopics()).sort()
      } catch (err) {
        const out = failed(step, now() - start, err)
        out.error_message = `call ${i + 1} of ${rounds}: ${out.error_message}`
        return out
      }
    }
    return ok(step, now() - start, topics)
  })
}

async function commitSync (step, ctx) {
  const a = step.args
  const consumer = ctx.consumer(a.group || 'cg')
  return withClient(ctx, consumer, async (c) => {
    let start = now()
    try {
      await c.connect()
      await c.subscribe({ topics: [a.topic || 't'] })
      await c.run({ autoCommit: false, eachBatch: async () => {} })
      if (a.warm_up) await c.commitOffsets([{ topic: a.topic || 't', partition: a.partition || 0, offset: String(a.offset || 0) }])
      start = now()
      await withinDeadline(step, c.commitOffsets([{ topic: a.topic || 't', partition: a.partition || 0, offset: String(a.offset || 0) }]))
      return ok(step, now() - start)
    } catch (err) {
      return failed(step, now() - start, err)
    }
  })
}

// close: a consumer of its own group fetching (poll_first_s after run() starts), then disconnect(),
// which stops the runner and waits for the fetch in flight; it takes no deadline: the step's is the
// application's (withinDeadline)
async function closeStep (step, ctx) {
  const a = step.args
  const consumer = ctx.consumer(ctx.group('close'))
  let start = now()
  try {
    await consumer.connect()
    await consumer.subscribe({ topics: [a.topic || 't'], fromBeginning: true })
    await consumer.run({ autoCommit: false, eachBatch: async () => {} })
    await sleep((a.poll_first_s ?? 0.3) * 1000)
    start = now()
    await withinDeadline(step, consumer.disconnect())
    return ok(step, now() - start)
  } catch (err) {
    const out = failed(step, now() - start, err)
    await close(ctx, consumer)
    return out
  }
}

module.exports = {
  now,
  sleep,
  ok,
  failed,
  close,
  withClient,
  asBytes,
  consumeUntil,
  SILENT_MEMBER,
  HUNG,
  AFTER,
  operations: {
    produce,
    produce_pipelined: producePipelined,
    poll,
    committed,
    end_offsets: endOffsets,
    beginning_offsets: beginningOffsets,
    offsets_for_times: offsetsForTimes,
    list_topics: listTopics,
    partitions_for: partitionsFor,
    commit_sync: commitSync,
    close: closeStep,
    admin_list_topics: adminListTopics,
    create_topics: createTopics,
    delete_records: deleteRecords
  }
}
