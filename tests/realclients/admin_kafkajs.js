// kafkajs's admin client over the emulator's admin APIs: topics, partitions, records, configs,
// groups, partition reassignments (with more than one broker) and (when the broker runs an
// authorizer) ACLs. argv: bootstrap, "acls" or "no-acls".
// Prints one JSON line with what each call answered; the pytest side asserts on it.
const { Kafka, logLevel, ConfigResourceTypes, AclResourceTypes, AclOperationTypes,
  AclPermissionTypes, ResourcePatternTypes } = require('kafkajs')

async function main () {
  const [bootstrap, acls] = process.argv.slice(2)
  const kafka = new Kafka({ clientId: 'kafkajs-admin', brokers: bootstrap.split(','), logLevel: logLevel.ERROR })
  const admin = kafka.admin()
  await admin.connect()
  const out = {}
  out.created = await admin.createTopics({ topics: [{ topic: 'kjs-admin', numPartitions: 2, replicationFactor: 1 }], timeout: 10000 })
  out.again = await admin.createTopics({ topics: [{ topic: 'kjs-admin', numPartitions: 2, replicationFactor: 1 }], timeout: 10000 })
  await admin.createPartitions({ topicPartitions: [{ topic: 'kjs-admin', count: 3 }], timeout: 10000 })
  const meta = await admin.fetchTopicMetadata({ topics: ['kjs-admin'] })
  out.partitions = meta.topics[0].partitions.length
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kjs-admin', configEntries: [{ name: 'retention.ms', value: '120000' }] }] })
  const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kjs-admin', configNames: ['retention.ms'] }] })
  out.retention = described.resources[0].configEntries[0].configValue
  const producer = kafka.producer()
  await producer.connect()
  await producer.send({ topic: 'kjs-admin', acks: -1, messages: [0, 1, 2].map((i) => ({ partition: 0, value: `v${i}` })) })
  await producer.disconnect()
  await admin.deleteTopicRecords({ topic: 'kjs-admin', partitions: [{ partition: 0, offset: '2' }] })
  out.offsets = (await admin.fetchTopicOffsets('kjs-admin')).find((p) => p.partition === 0)
  const brokers = (await admin.describeCluster()).brokers.map((b) => b.nodeId).sort()
  if (brokers.length > 1) {
    // partition 1 moves to another broker: the new replica copies the log, then the move completes
    const before = meta.topics[0].partitions.find((p) => p.partitionId === 1).replicas
    const target = brokers.find((b) => !before.includes(b))
    await admin.alterPartitionReassignments({ topics: [{ topic: 'kjs-admin', partitionAssignment: [{ partition: 1, replicas: [target] }] }], timeout: 10000 })
    let replicas = before
    for (let i = 0; i < 100; i++) {
      const pending = (await admin.listPartitionReassignments({ timeout: 10000 })).topics
      replicas = (await admin.fetchTopicMetadata({ topics: ['kjs-admin'] })).topics[0].partitions.find((p) => p.partitionId === 1).replicas
      if (pending.length === 0 && replicas.length === 1 && replicas[0] === target) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    out.moved = replicas[0] === target && replicas.length === 1
  }
  try {
    await admin.deleteGroups(['kjs-nobody'])
    out.deleteGroups = 'ok'
  } catch (e) {
    out.deleteGroups = e.groups ? e.groups.map((g) => g.error && g.error.type) : e.type || e.message
  }
  if (acls === 'acls') {
    const acl = { resourceType: AclResourceTypes.TOPIC, resourceName: 'kjs-elsewhere', resourcePatternType: ResourcePatternTypes.LITERAL, principal: 'User:bob', host: '*', operation: AclOperationTypes.READ, permissionType: AclPermissionTypes.ALLOW }
    await admin.createAcls({ acl: [acl] })
    const found = await admin.describeAcls({ resourceType: AclResourceTypes.ANY, resourcePatternType: ResourcePatternTypes.ANY, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY })
    out.acls = found.resources.map((r) => [r.resourceName, r.acls.map((a) => a.principal)])
    const deleted = await admin.deleteAcls({ filters: [{ resourceType: AclResourceTypes.ANY, resourcePatternType: ResourcePatternTypes.ANY, operation: AclOperationTypes.ANY, permissionType: AclPermissionTypes.ANY, principal: 'User:bob' }] })
    out.deletedAcls = deleted.filterResponses[0].matchingAcls.length
  }
  await admin.deleteTopics({ topics: ['kjs-admin'], timeout: 10000 })
  // a real broker learns of the deletion from the controller a moment later
  for (let i = 0; i < 50 && (out.left = (await admin.listTopics()).includes('kjs-admin')); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  await admin.disconnect()
  console.log(JSON.stringify(out))
}

main().catch((e) => { console.error(e); process.exit(1) })
