// Drives kafkajs against broker-emu: acks=all produce (incl. a 900 KB message), group consume
// with commits and a second member taking over, earliest/latest/by-timestamp offsets.
// Prints one JSON line with what it saw; the pytest side asserts on it.
const { Kafka, logLevel } = require('kafkajs')

async function consumeN (kafka, groupId, n, ms) {
  const consumer = kafka.consumer({ groupId, maxBytes: 2 * 1024 * 1024, sessionTimeout: 10000, rebalanceTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic: 't', fromBeginning: true })
  const got = []
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic, partition, message }) => {
        got.push(message.value.length > 100 ? `big:${message.value.length}` : message.value.toString())
        await consumer.commitOffsets([{ topic, partition, offset: (BigInt(message.offset) + 1n).toString() }])
        if (got.length >= n) { clearTimeout(timer); resolve() }
      }
    })
  })
  await consumer.disconnect()
  return got
}

async function main () {
  const kafka = new Kafka({ clientId: 'kafkajs-check', brokers: process.argv[2].split(','), logLevel: logLevel.ERROR })
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const messages = []
  for (let i = 0; i < 10; i++) messages.push({ value: `m${i}`, partition: i % 3, timestamp: String(1000 + i) })
  await producer.send({ topic: 't', acks: -1, messages })
  await producer.send({ topic: 't', acks: -1, messages: [{ value: Buffer.alloc(900000, 66), partition: 0, timestamp: '8000' }] })
  const admin = kafka.admin()
  await admin.connect()
  const latest = await admin.fetchTopicOffsets('t')
  const byTime = await admin.fetchTopicOffsetsByTimestamp('t', 8000)
  await admin.disconnect()
  const first = await consumeN(kafka, 'jsg', 11, 20000)
  await producer.send({ topic: 't', acks: -1, messages: [{ value: 'after0' }, { value: 'after1' }] })
  const second = await consumeN(kafka, 'jsg', 2, 20000)
  await producer.disconnect()
  console.log(JSON.stringify({ latest, byTime, first, second }))
}

main().catch((e) => { console.error(e); process.exit(1) })
