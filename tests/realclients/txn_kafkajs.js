// kafkajs transactions: one committed (6 records over 3 partitions plus the group's offset),
// one aborted (6 records, sent before the abort). Args: bootstrap topic group prefix.
// Prints {"done": true} when both are finished.
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, topic, groupId, prefix] = process.argv.slice(2)
  const kafka = new Kafka({ clientId: 'kafkajs-txn', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING })
  const producer = kafka.producer({ transactionalId: `tx-${prefix}`, idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  const send = (txn, kind) => txn.send({
    topic,
    messages: [0, 1, 2, 3, 4, 5].map((i) => ({ value: `${prefix}-${kind}${i}`, partition: i % 3 }))
  })
  const committed = await producer.transaction()
  await send(committed, 'c')
  await committed.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '7' }] }] })
  await committed.commit()
  const aborted = await producer.transaction()
  await send(aborted, 'a')
  await aborted.sendOffsets({ consumerGroupId: groupId, topics: [{ topic, partitions: [{ partition: 0, offset: '99' }] }] })
  await aborted.abort()
  await producer.disconnect()
  console.log(JSON.stringify({ done: true }))
}

main().catch((e) => { console.error(e && e.stack ? e.stack : e); process.exit(1) })
