// kafkajs over a secured listener: produce three values to t[0] and read them back.
// argv: bootstrap, CA file, then "ssl" or a SASL mechanism, user, password (for OAUTHBEARER: the
// token's principal; the script makes an unsecured JWT, as Kafka's default validator accepts),
// and optionally a client certificate and its key (mutual TLS).
// Prints one JSON line with the values it read.
const fs = require('fs')
const { Kafka, logLevel } = require('kafkajs')

async function main () {
  const [bootstrap, ca, mechanism, username, password, cert, key] = process.argv.slice(2)
  const config = { clientId: 'kafkajs-security', brokers: bootstrap.split(','), logLevel: logLevel.ERROR,
    ssl: { ca: [fs.readFileSync(ca, 'utf-8')] } }
  if (cert) Object.assign(config.ssl, { cert: fs.readFileSync(cert, 'utf-8'), key: fs.readFileSync(key, 'utf-8') })
  if (mechanism === 'OAUTHBEARER') {
    const part = (o) => Buffer.from(JSON.stringify(o)).toString('base64url')
    const now = Math.floor(Date.now() / 1000)
    config.sasl = {
      mechanism: 'oauthbearer',
      oauthBearerProvider: async () => ({ value: `${part({ alg: 'none' })}.${part({ sub: username, iat: now, exp: now + 3600 })}.` })
    }
  } else if (mechanism !== 'ssl') config.sasl = { mechanism: mechanism.toLowerCase(), username, password }
  const kafka = new Kafka(config)
  const producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  const tag = `kafkajs-${mechanism}`
  await producer.send({ topic: 't', acks: -1, messages: [0, 1, 2].map((i) => ({ partition: 0, value: `${tag}-${i}` })) })
  await producer.disconnect()
  const consumer = kafka.consumer({ groupId: tag, sessionTimeout: 10000, rebalanceTimeout: 10000 })
  await consumer.connect()
  await consumer.subscribe({ topic: 't', fromBeginning: true })
  const got = []
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, 30000)
    consumer.run({
      eachMessage: async ({ message }) => {
        const value = message.value.toString()
        if (value.startsWith(tag)) got.push(value)
        if (got.length >= 3) { clearTimeout(timer); resolve() }
      }
    })
  })
  await consumer.disconnect()
  console.log(JSON.stringify(got))
}

main().catch((e) => { console.error(e); process.exit(1) })
