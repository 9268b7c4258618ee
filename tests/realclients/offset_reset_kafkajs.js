// A kafkajs group member whose committed offset is past the end of the partition: the broker
// answers OFFSET_OUT_OF_RANGE and kafkajs resets to the earliest offset (fromBeginning) or the
// latest one. Args: bootstrap topic group fromBeginning(true|false) count timeoutMs.
// Prints {"committed": ...} once the bad offset is committed, then one JSON line per message.
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, topic, groupId, fromBeginning, count, timeoutMs] = process.argv.slice(2)
  const kafka = new Kafka({ clientId: 'kafkajs-reset', brokers: bootstrap.split(','), logLevel: logLevel.NOTHING })
  const admin = kafka.admin()
  await admin.connect()
  await admin.setOffsets({ groupId, topic, partitions: [{ partition: 0, offset: '1000' }] })
  await admin.disconnect()
  console.log(JSON.stringify({ committed: 1000 }))
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, rebalanceTimeout: 10000, maxWaitTimeInMs: 200 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: fromBeginning === 'true' })
  let seen = 0
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, Number(timeoutMs))
    consumer.run({
      autoCommit: false,
      eachMessage: async ({ message }) => {
        console.log(JSON.stringify({ offset: message.offset, value: message.value.toString() }))
        seen += 1
        if (seen >= Number(count)) { clearTimeout(timer); resolve() }
      }
    })
  })
  await consumer.disconnect()
}

main().catch((e) => { console.error(e); process.exit(1) })
