// Drive kafkajs against a loopback listener (see drive_python.py for the shared contract).
//
//     node drive_kafkajs.js PORT TOPIC CLIENT_ID VALUE MODE
//
// MODE "produce" sends VALUE to partition 0 of TOPIC with acks=1 and waits for the answer;
// "first" does the same with timeouts short enough to give up quickly against a silent
// listener. Prints one JSON line {client, version, delivered, error} and exits 0.
'use strict'

const { Kafka, logLevel } = require('kafkajs')
const { version } = require('kafkajs/package.json')

async function main ([port, topic, clientId, value, mode]) {
  const first = mode === 'first'
  const kafka = new Kafka({
    clientId,
    brokers: [`127.0.0.1:${port}`],
    connectionTimeout: 1000,
    requestTimeout: first ? 1500 : 4000,
    // no retries: one attempt shows what the client sends, and keeps the run short
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING
  })
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  const out = { client: 'kafkajs', version, delivered: false, error: null }
  try {
    await producer.connect()
    await producer.send({ topic, acks: 1, messages: [{ value, partition: 0 }] })
    out.delivered = true
  } catch (err) {
    out.error = `${err.name}: ${err.message}`
  } finally {
    await producer.disconnect().catch(() => {})
  }
  process.stdout.write(JSON.stringify(out) + '\n')
}

main(process.argv.slice(2)).catch((err) => {
  process.stderr.write(String(err && err.stack) + '\n')
  process.exit(2)
})
