// kafkajs's errors under the Java client's exception names the contracts read (conformance/contracts.py),
// where the error is clearly the same one; otherwise kafkajs's own name. The message keeps kafkajs's
// own words and the chain of names, outermost first (e.g. "KafkaJSNumberOfRetriesExceeded <-
// KafkaJSRequestTimeoutError: Request Produce(key: 0, version: 7) timed out").
//
// Sources (kafkajs 2.2.4, node_modules/kafkajs/src):
//   retry/index.js            the retrier rejects with KafkaJSNumberOfRetriesExceeded(e) once `retries` are
//                             spent, or KafkaJSNonRetriableError(e) for an error it may not retry; both keep
//                             the error they gave up on in `.cause` (errors.js). Java reports that error
//                             itself, so the name is the cause's.
//   network/requestQueue/socketRequest.js
//                             KafkaJSRequestTimeoutError: no answer within requestTimeout (the request
//                             queue's timer). Java: org.apache.kafka.common.errors.TimeoutException.
//   protocol/error.js         KafkaJSProtocolError: a Kafka error code, with `.type` (REQUEST_TIMED_OUT...)
//                             and `.code`; KafkaJSCreateTopicError (admin createTopics) is one, gathered in
//                             a KafkaJSAggregateError; KafkaJSDeleteTopicRecordsError holds one per partition.
//                             A code kafkajs 2.2.4 does not know (its table stops at 88: PRODUCER_FENCED,
//                             90, is one) becomes type KAFKAJS_UNKNOWN_ERROR_CODE, code -99, the broker's
//                             code only in the message ("Unknown error code 90": unknownErrorCode); it is
//                             read back from there.
//   errors.js                 KafkaJSTimeout / KafkaJSLockTimeout: a deadline of kafkajs's own (waitFor's
//                             maxWait, the broker lock while connecting) -> TimeoutException.
//   network/connection.js     KafkaJSConnectionError "Connection timeout": connect() not done within
//                             connectionTimeout (its onTimeout timer) -> TimeoutException, as the Go
//                             programs name a dial that hit its deadline (lineproto/errors.go IsTimeout);
//                             any other KafkaJSConnectionError (refused, closed) keeps its name.
'use strict'

// Kafka error code -> the Java client's exception for it (the table of the Go programs,
// conformance/adapters/go/internal/lineproto/errors.go, with the transactional codes)
const JAVA_NAMES = {
  3: 'UnknownTopicOrPartitionException',
  5: 'LeaderNotAvailableException',
  6: 'NotLeaderOrFollowerException',
  7: 'TimeoutException', // REQUEST_TIMED_OUT: Java raises org.apache.kafka.common.errors.TimeoutException
  10: 'RecordTooLargeException',
  14: 'CoordinatorLoadInProgressException',
  15: 'CoordinatorNotAvailableException',
  16: 'NotCoordinatorException',
  17: 'InvalidTopicException',
  22: 'IllegalGenerationException',
  25: 'UnknownMemberIdException',
  27: 'RebalanceInProgressException',
  29: 'TopicAuthorizationException',
  30: 'GroupAuthorizationException',
  36: 'TopicExistsException',
  41: 'NotControllerException',
  47: 'InvalidProducerEpochException',
  48: 'InvalidTxnStateException',
  49: 'InvalidPidMappingException',
  51: 'ConcurrentTransactionsException',
  67: 'InvalidRecordException',
  90: 'ProducerFencedException'
}
// Java's TransactionManager turns INVALID_PRODUCER_EPOCH into ProducerFencedException for the
// transactional requests (InitProducerId, AddPartitionsToTxn, EndTxn: "fatalError(Errors.PRODUCER_FENCED
// .exception())"); a transactional step reads 47 that way
const TXN_NAMES = { 47: 'ProducerFencedException' }
const WRAPPERS = new Set(['KafkaJSNumberOfRetriesExceeded', 'KafkaJSNonRetriableError'])
// AbandonedAtDeadline: the application's own deadline on a call that takes none (kafkajs-ops.js withinDeadline)
const TIMEOUTS = new Set(['KafkaJSRequestTimeoutError', 'KafkaJSTimeout', 'KafkaJSLockTimeout', 'AbandonedAtDeadline'])
const CONNECT_TIMEOUT = 'Connection timeout'   // network/connection.js onTimeout: connectionTimeout passed

// the errors from the outermost to the one the call failed on
function chain (err) {
  const out = [err]
  let e = err
  for (;;) {
    let next = null
    if (WRAPPERS.has(e.name) && e.cause && e.cause !== e) next = e.cause
    else if (e.name === 'KafkaJSAggregateError' && e.errors && e.errors.length) next = e.errors[0]
    else if (e.name === 'KafkaJSDeleteTopicRecordsError' && e.partitions && e.partitions.length) next = e.partitions[0].error
    if (!next || out.includes(next)) return out
    out.push(next)
    e = next
  }
}

function javaName (err, { transactional = false } = {}) {
  if (!err || typeof err !== 'object') return 'Error'
  const e = chain(err).pop()
  if (TIMEOUTS.has(e.name)) return 'TimeoutException'
  if (e.name === 'KafkaJSConnectionError' && e.message === CONNECT_TIMEOUT) return 'TimeoutException'
  if (typeof e.code === 'number' && e.type) {
    const unknown = e.type === 'KAFKAJS_UNKNOWN_ERROR_CODE' && /Unknown error code (-?\d+)/.exec(e.message || '')
    const code = unknown ? Number(unknown[1]) : e.code
    return (transactional && TXN_NAMES[code]) || JAVA_NAMES[code] || e.type
  }
  return e.name || 'Error'
}

function message (err) {
  if (!err || typeof err !== 'object') return String(err)
  const links = chain(err)
  const last = links[links.length - 1]
  const type = last.type ? ` (${last.type})` : ''
  return `${links.map((e) => e.name).join(' <- ')}${type}: ${last.message}`
}

module.exports = { javaName, message, chain, JAVA_NAMES }
