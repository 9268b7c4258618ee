// The scenario's config (Kafka's dotted names, already divided by the run's scale) as kafkajs's
// options, and kafkajs's own defaults for the rest divided by the same scale ("adapter.scale"), so a
// scaled run is kafkajs's behaviour at full length, sped up. The mapping, with where kafkajs reads
// each option (node_modules/kafkajs/src):
//
//   Kafka name                           kafkajs option (default)                 read in
//   request.timeout.ms                   Kafka requestTimeout (30000)             network/requestQueue: a request
//                                                                                 unanswered this long is rejected
//                                                                                 (KafkaJSRequestTimeoutError); the
//                                                                                 connection stays open
//   socket.connection.setup.timeout.ms   Kafka connectionTimeout (1000)           network/connection.js connect():
//                                                                                 the TCP connect only (cleared in
//                                                                                 onConnect, before any SASL)
//   retry.backoff.ms, retry.backoff.max.ms  Kafka retry.initialRetryTime (300),   retry/index.js: backoff x2
//                                        retry.maxRetryTime (30000)               (+-20 %), capped per retry
//   retries                              producer retry.retries (5, idempotent    index.js producer(),
//                                        or not: Kafka.producer() always hands    retry/defaults.js
//                                        createProducer a retry object, so its
//                                        idempotent default, MAX_SAFE_INTEGER,
//                                        never applies)
//   acks                                 send({acks}) (-1)                        producer/messageProducer.js
//   enable.idempotence                   producer idempotent (false)              producer/index.js
//   transaction.timeout.ms               producer transactionTimeout (60000)      producer/eosManager
//   fetch.max.wait.ms                    consumer maxWaitTimeInMs (5000)          consumer/consumerGroup.js
//   session.timeout.ms                   consumer sessionTimeout (30000)          JoinGroup
//   heartbeat.interval.ms                consumer heartbeatInterval (3000)        consumer/runner.js
//   max.poll.interval.ms                 consumer rebalanceTimeout (60000): what  JoinGroup's rebalance_timeout_ms
//                                        Java sends as JoinGroup's rebalance
//                                        timeout (ConsumerCoordinator)
//   metadata.max.age.ms                  metadataMaxAge (300000)                  cluster/index.js
//   security.protocol SASL_*, sasl.*     Kafka sasl {mechanism, username, password}
//
// kafkajs has no delivery.timeout.ms, max.block.ms, default.api.timeout.ms or linger.ms: those are
// not passed (the Python side declares them lacking). Fixed constants kafkajs does not expose stay
// at full length in a scaled run: a request's timer is checked every min(requestTimeout, 100) ms
// (network/requestQueue/index.js), a Fetch's timeout is maxWaitTime + 100 ms and a JoinGroup's
// rebalanceTimeout + 5000 ms (protocol/requests/fetch, joinGroup: NETWORK_DELAY), and DeleteRecords
// always carries timeout_ms 5000 (protocol/requests/deleteRecords/v0/request.js).
'use strict'

const { Kafka, logLevel, Partitioners } = require('kafkajs')
const util = require('util')

// kafkajs's defaults, ms (src/index.js, producer, consumer, retry/defaults.js, broker/index.js)
const DEFAULTS = {
  requestTimeout: 30000,
  connectionTimeout: 1000,
  authenticationTimeout: 10000,
  initialRetryTime: 300,
  maxRetryTime: 30000,
  metadataMaxAge: 300000,
  sessionTimeout: 30000,
  rebalanceTimeout: 60000,
  heartbeatInterval: 3000,
  maxWaitTimeInMs: 5000,
  transactionTimeout: 60000,
  produceTimeout: 30000 // send({timeout}): the Produce's timeout_ms
}

// kafkajs logs through its logCreator; stdout carries the protocol, so everything goes to stderr
const stderrLog = () => ({ namespace, label, log }) => {
  const { message, ...rest } = log
  process.stderr.write(`${new Date().toISOString()} ${label} [${namespace}] ${message} ${util.inspect(rest, { breakLength: Infinity })}\n`)
}

function settings (run) {
  const c = run.config
  const scale = Number(c['adapter.scale'] || 1)
  const own = (name) => Math.max(1, Math.round(DEFAULTS[name] / scale))
  const pick = (kafkaName, name) => (c[kafkaName] !== undefined ? Number(c[kafkaName]) : own(name))
  const acks = c.acks === undefined ? -1 : ['all', '-1', -1].includes(c.acks) ? -1 : Number(c.acks)
  return {
    client: {
      brokers: run.bootstrap.split(','),
      requestTimeout: pick('request.timeout.ms', 'requestTimeout'),
      connectionTimeout: pick('socket.connection.setup.timeout.ms', 'connectionTimeout'),
      authenticationTimeout: own('authenticationTimeout'),
      retry: {
        initialRetryTime: pick('retry.backoff.ms', 'initialRetryTime'),
        maxRetryTime: pick('retry.backoff.max.ms', 'maxRetryTime')
      },
      sasl: sasl(c),
      // KAFKAJS_ADAPTER_DEBUG=1 in the environment: kafkajs's debug log (every request) in out/adapters/kafkajs.log
      logLevel: process.env.KAFKAJS_ADAPTER_DEBUG === '1' ? logLevel.DEBUG : logLevel.WARN,
      logCreator: stderrLog
    },
    metadataMaxAge: pick('metadata.max.age.ms', 'metadataMaxAge'),
    idempotent: c['enable.idempotence'] === true || c['enable.idempotence'] === 'true',
    retries: c.retries === undefined ? undefined : Number(c.retries),
    acks,
    produceTimeout: own('produceTimeout'),
    transactionTimeout: pick('transaction.timeout.ms', 'transactionTimeout'),
    consumer: {
      sessionTimeout: pick('session.timeout.ms', 'sessionTimeout'),
      rebalanceTimeout: pick('max.poll.interval.ms', 'rebalanceTimeout'),
      heartbeatInterval: pick('heartbeat.interval.ms', 'heartbeatInterval'),
      maxWaitTimeInMs: pick('fetch.max.wait.ms', 'maxWaitTimeInMs')
    },
    scale
  }
}

function sasl (c) {
  if (!String(c['security.protocol'] || '').startsWith('SASL')) return undefined
  return { mechanism: String(c['sasl.mechanism'] || 'PLAIN').toLowerCase(), username: c['sasl.username'], password: c['sasl.password'] }
}

// one run's clients: every one made here is disconnected after its step (ops.js)
class Clients {
  constructor (run) {
    this.run = run
    this.s = settings(run)
    this.clientId = run.client_id
    this.seq = 0
  }

  kafka (clientId = this.clientId) {
    return new Kafka({ ...this.s.client, clientId })
  }

  producer (options = {}, clientId = this.clientId) {
    const { retries } = this.s
    const retry = retries === undefined ? {} : { retry: { retries } }
    return this.kafka(clientId).producer({
      createPartitioner: Partitioners.DefaultPartitioner,
      metadataMaxAge: this.s.metadataMaxAge,
      idempotent: this.s.idempotent,
      ...retry,
      ...options
    })
  }

  transactional (clientId = this.clientId) {
    // as kafkajs's documentation sets up a transactional producer (idempotent, one request in flight)
    return this.producer({ transactionalId: `${this.clientId}-tx`, idempotent: true, maxInFlightRequests: 1, transactionTimeout: this.s.transactionTimeout }, clientId)
  }

  consumer (groupId, options = {}, clientId = this.clientId) {
    return this.kafka(clientId).consumer({ groupId, metadataMaxAge: this.s.metadataMaxAge, ...this.s.consumer, ...options })
  }

  admin () {
    return this.kafka().admin()
  }

  group (prefix) {
    this.seq += 1
    return `${this.clientId}-${prefix}-${this.seq}`
  }
}

module.exports = { Clients, settings, DEFAULTS }
