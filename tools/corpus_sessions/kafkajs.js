// Drive kafkajs through a rich session against broker-emu, for the request corpus
// (tools/capture_corpus.py; python_clients.py describes the session).
//
//     node tools/corpus_sessions/kafkajs.js BOOTSTRAP
//
// kafkajs writes gzip itself; snappy, lz4 and zstd need codec packages we do not install, and
// it has no assign-mode consumer. Every step runs even when an earlier one failed. Prints one
// JSON line {client, version, steps: {step: "ok" | error}}.
'use strict'

const { Kafka, logLevel, CompressionTypes, ConfigResourceTypes } = require('kafkajs')
const { version } = require('kafkajs/package.json')

const TOPIC = 't'
const steps = {}

async function step (name, fn) {
  try {
    await fn()
    steps[name] = 'ok'
  } catch (err) {
    steps[name] = `${err.name}: ${err.message}`.slice(0, 300)
  }
}

function records () {
  return [0, 1, 2].map((i) => ({ key: `k${i}`, value: `value-${i}-${'x'.repeat(100)}`, partition: i, headers: { h: '1' } }))
}

async function produce (kafka, { compression, acks, idempotent }) {
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent, maxInFlightRequests: idempotent ? 1 : undefined })
  await producer.connect()
  try {
    await producer.send({ topic: TOPIC, compression, acks, messages: records() })
  } finally {
    await producer.disconnect()
  }
}

async function consumeInGroup (kafka) {
  const consumer = kafka.consumer({ groupId: 'js-group', sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 6000 })
  await consumer.connect()
  let got = 0
  try {
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true })
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${got} records`)), 15000)
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ topic, partition, message, heartbeat }) => {
          got += 1
          await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }])
          await heartbeat()
          if (got >= 3) { clearTimeout(timer); setTimeout(resolve, 1000) } // a few heartbeats
        }
      })
    })
  } finally {
    await consumer.disconnect() // LeaveGroup
  }
}

async function adminCalls (kafka) {
  const admin = kafka.admin()
  await step('admin connect', () => admin.connect())
  await step('admin listTopics', () => admin.listTopics())
  await step('admin fetchTopicMetadata named', () => admin.fetchTopicMetadata({ topics: [TOPIC] }))
  await step('admin fetchTopicMetadata all', () => admin.fetchTopicMetadata())
  await step('admin describeCluster', () => admin.describeCluster())
  await step('admin createTopics', () => admin.createTopics({
    topics: [{ topic: 'js-new', numPartitions: 2, replicationFactor: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }]
  }))
  await step('admin createTopics validateOnly', () => admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: 'js-never' }] }))
  await step('admin describeConfigs', () => admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: ConfigResourceTypes.TOPIC, name: TOPIC }, { type: ConfigResourceTypes.BROKER, name: '0' }]
  }))
  await step('admin listGroups', () => admin.listGroups())
  await step('admin describeGroups', () => admin.describeGroups(['js-group']))
  await step('admin fetchOffsets', () => admin.fetchOffsets({ groupId: 'js-group', topics: [TOPIC] }))
  await step('admin setOffsets', () => admin.setOffsets({ groupId: 'js-group', topic: TOPIC, partitions: [{ partition: 0, offset: '1' }] }))
  await step('admin resetOffsets', () => admin.resetOffsets({ groupId: 'js-group', topic: TOPIC, earliest: true }))
  await step('admin fetchTopicOffsets', () => admin.fetchTopicOffsets(TOPIC))
  await step('admin fetchTopicOffsetsByTimestamp', () => admin.fetchTopicOffsetsByTimestamp(TOPIC, Date.now() - 60000))
  await step('admin deleteTopics', () => admin.deleteTopics({ topics: ['js-new'] }))
  await admin.disconnect().catch(() => {})
}

async function main ([bootstrap]) {
  const kafka = new Kafka({ clientId: 'corpus-kafkajs', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING, retry: { retries: 2 } })
  await step('produce none', () => produce(kafka, { compression: CompressionTypes.None, acks: 1 }))
  await step('produce gzip', () => produce(kafka, { compression: CompressionTypes.GZIP, acks: 1 }))
  steps['produce snappy'] = steps['produce lz4'] = steps['produce zstd'] = 'skipped: kafkajs needs a codec package for it'
  await step('produce acks=0', () => produce(kafka, { compression: CompressionTypes.None, acks: 0 }))
  await step('produce acks=all', () => produce(kafka, { compression: CompressionTypes.GZIP, acks: -1 }))
  await step('produce idempotent', () => produce(kafka, { compression: CompressionTypes.GZIP, acks: -1, idempotent: true }))
  await step('consume in a group', () => consumeInGroup(kafka))
  await adminCalls(kafka)
  process.stdout.write(JSON.stringify({ client: 'kafkajs', version, steps }) + '\n')
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(String(err && err.stack) + '\n')
  process.exit(2)
})
