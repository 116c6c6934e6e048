// v5client.js: the official RocketMQ 5 Node.js client (rocketmq-client-nodejs) as e2e/grpc_nodejs_test.go drives
// it. Every outcome is one JSON line on stdout; the exit code is 0 when the run did what was asked.
//
//   node v5client.js produce ENDPOINT TOPIC FIFO_TOPIC TAG
//       sends 2 normal, 3 FIFO (message group "g1", to FIFO_TOPIC), 1 delayed (2 s) and 3 transactional
//       messages: one committed, one rolled back, one left open that the transaction checker commits
//       when the broker checks it back; prints {"sent":...} per message
//   node v5client.js send ENDPOINT TOPIC N PREFIX
//       sends N normal messages with bodies PREFIX-1 .. PREFIX-N
//   node v5client.js paced ENDPOINT TOPIC N PREFIX PACE_MS
//       sends N normal messages PACE_MS apart, going on after a failed send; prints {"sent":...} for each
//       acknowledged one and {"failed":...} for the others
//   node v5client.js recall ENDPOINT TOPIC DELAY_MS
//       sends "recalled" and "kept" due at one time DELAY_MS from now and "later" 500 ms after them, then
//       recalls "recalled" with its send's recall handle; prints {"sent":...} per message and
//       {"recalled":id}
//   node v5client.js consume ENDPOINT GROUP TOPIC WANT SECONDS [INVISIBLE_MS]
//       a SimpleConsumer receives and acks until WANT messages came or SECONDS passed; prints
//       {"received":...} per message; with INVISIBLE_MS, the first message is left unacked once and must
//       come back after that invisible duration with a higher delivery attempt
//   node v5client.js drain ENDPOINT GROUP TOPIC WANT SECONDS CONSUMERS
//       CONSUMERS SimpleConsumers of GROUP (in this process) receive up to 32 messages at a time (invisible
//       30 s) and ack each, until WANT distinct messages came or SECONDS passed; prints one line at the end:
//       {"drained": distinct, "deliveries", "again" (deliveries of a message already received, by why:
//       "attempt" the broker's delivery attempt above 1, "afterAckError" an earlier ack of it failed,
//       "other"), "ackErrors", "seconds", "ids": every distinct message id}
//   node v5client.js push ENDPOINT GROUP TOPIC WANT SECONDS POISON
//       a PushConsumer consumes until WANT messages were consumed successfully or SECONDS passed; every
//       message fails its first delivery (FAILURE: the client changes its invisible duration for a retry),
//       a message whose body is POISON fails every time (an ordered group then forwards it to the
//       dead-letter queue); prints {"received":...} per delivery
'use strict';
const { Producer, SimpleConsumer, PushConsumer, ConsumeResult } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const fs = require('node:fs');

// out writes one JSON line to stdout at once (a synchronous write: nothing is lost at process.exit).
const out = (o) => fs.writeSync(1, JSON.stringify(o) + '\n');
const say = (...a) => process.stderr.write(a.map(String).join(' ') + '\n');
// V5CLIENT_DEBUG=1 shows the client's own logs on stderr; otherwise errors only.
const quiet = process.env.V5CLIENT_DEBUG ? { info: say, warn: say, debug: say, error: say } : { info() {}, warn() {}, debug() {}, error: say };

async function produce(endpoint, topic, fifoTopic, tag) {
  const checked = new Set(); // ids the checker was asked about
  const open = new Set(); // ids of the transactional messages left open: the checker commits them
  const producer = new Producer({
    endpoints: endpoint, topics: [ topic, fifoTopic ], logger: quiet,
    checker: {
      async check(view) {
        checked.add(view.messageId);
        out({ checked: view.messageId, commit: open.has(view.messageId) });
        return open.has(view.messageId) ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
      },
    },
  });
  await producer.startup();
  const sent = (kind, r, body) => out({ sent: kind, id: r.messageId, body, offset: r.offset });
  for (const i of [ 1, 2 ]) {
    const body = `normal-${i}`;
    sent('normal', await producer.send({ topic, tag, keys: [ `k${i}` ], body: Buffer.from(body), properties: new Map([ [ 'p', 'v' ] ]) }), body);
  }
  for (const i of [ 1, 2, 3 ]) {
    const body = `fifo-${i}`;
    sent('fifo', await producer.send({ topic: fifoTopic, tag, messageGroup: 'g1', body: Buffer.from(body) }), body);
  }
  sent('delay', await producer.send({ topic, tag, delay: 2000, body: Buffer.from('delay-1') }), 'delay-1');
  for (const [ body, end ] of [ [ 'tx-commit', 'commit' ], [ 'tx-rollback', 'rollback' ], [ 'tx-checked', 'open' ] ]) {
    const tx = producer.beginTransaction();
    const r = await producer.send({ topic, tag, body: Buffer.from(body) }, tx);
    sent(`tx-${end}`, r, body);
    if (end === 'commit') await tx.commit();
    else if (end === 'rollback') await tx.rollback();
    else open.add(r.messageId);
  }
  // Stay up until the broker has checked the open transaction back (the checker committed it).
  const deadline = Date.now() + 30000;
  while ([ ...open ].some((id) => !checked.has(id)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await producer.shutdown();
  if ([ ...open ].some((id) => !checked.has(id))) {
    out({ error: 'the open transaction was not checked back within 30 s' });
    process.exitCode = 1;
  }
}

async function sendN(endpoint, topic, n, prefix) {
  const producer = new Producer({ endpoints: endpoint, topics: [ topic ], logger: quiet });
  await producer.startup();
  for (let i = 1; i <= n; i++) {
    const r = await producer.send({ topic, body: Buffer.from(`${prefix}-${i}`) });
    out({ sent: 'normal', id: r.messageId, body: `${prefix}-${i}` });
  }
  await producer.shutdown();
}

async function paced(endpoint, topic, n, prefix, paceMs) {
  const producer = new Producer({ endpoints: endpoint, topics: [ topic ], logger: quiet });
  await producer.startup();
  for (let i = 1; i <= n; i++) {
    const body = `${prefix}-${i}`;
    try {
      const r = await producer.send({ topic, body: Buffer.from(body) });
      out({ sent: 'normal', id: r.messageId, body });
    } catch (err) {
      out({ failed: body, reason: String(err) });
    }
    await new Promise((resolve) => setTimeout(resolve, paceMs));
  }
  await producer.shutdown();
}

async function recall(endpoint, topic, delayMs) {
  const producer = new Producer({ endpoints: endpoint, topics: [ topic ], logger: quiet });
  await producer.startup();
  const at = Date.now() + delayMs;
  const receipts = {};
  for (const [ body, t ] of [ [ 'recalled', at ], [ 'kept', at ], [ 'later', at + 500 ] ]) {
    const r = await producer.send({ topic, body: Buffer.from(body), deliveryTimestamp: new Date(t) });
    receipts[body] = r;
    out({ sent: body, id: r.messageId, body, handle: r.recallHandle });
  }
  const rc = await producer.recallMessage(topic, receipts.recalled.recallHandle);
  out({ recalled: rc.messageId });
  await producer.shutdown();
}

async function consume(endpoint, group, topic, want, seconds, invisibleMs) {
  const consumer = new SimpleConsumer({ endpoints: endpoint, consumerGroup: group, subscriptions: new Map([ [ topic, '*' ] ]),
    awaitDuration: 2000, logger: quiet });
  await consumer.startup();
  const seen = new Set();
  let held; // the message left unacked once
  const deadline = Date.now() + seconds * 1000;
  while (seen.size < want && Date.now() < deadline) {
    const invisible = invisibleMs ? Number(invisibleMs) : 15000;
    const msgs = await consumer.receive(16, invisible);
    for (const m of msgs) {
      out({ received: m.messageId, body: m.body.toString(), tag: m.tag, group: m.messageGroup, attempt: m.deliveryAttempt,
        keys: m.keys, props: Object.fromEntries(m.properties), topic: m.topic });
      if (invisibleMs && !held) {
        held = m.messageId; // not acked: must come back
        continue;
      }
      await consumer.ack(m);
      seen.add(m.messageId);
    }
  }
  await consumer.shutdown();
  if (seen.size < want) {
    out({ error: `received ${seen.size} of ${want} messages in ${seconds}s` });
    process.exitCode = 1;
  }
}

async function drain(endpoint, group, topic, want, seconds, consumers) {
  const started = Date.now();
  const deadline = started + seconds * 1000;
  const seen = new Set();
  const ackFailed = new Set();
  const again = { attempt: 0, afterAckError: 0, other: 0 };
  let deliveries = 0;
  let ackErrors = 0;
  const run = async () => {
    const consumer = new SimpleConsumer({ endpoints: endpoint, consumerGroup: group, subscriptions: new Map([ [ topic, '*' ] ]),
      awaitDuration: 2000, logger: quiet });
    await consumer.startup();
    while (seen.size < want && Date.now() < deadline) {
      const msgs = await consumer.receive(32, 30000);
      deliveries += msgs.length;
      await Promise.all(msgs.map(async (m) => {
        if (seen.has(m.messageId)) {
          if ((m.deliveryAttempt || 1) > 1) again.attempt++;
          else if (ackFailed.has(m.messageId)) again.afterAckError++;
          else again.other++;
        }
        seen.add(m.messageId);
        try {
          await consumer.ack(m);
        } catch (err) {
          ackErrors++;
          ackFailed.add(m.messageId);
          say('ack', m.messageId, String(err));
        }
      }));
    }
    await consumer.shutdown();
  };
  await Promise.all(Array.from({ length: consumers }, run));
  out({ drained: seen.size, deliveries, again, ackErrors, seconds: (Date.now() - started) / 1000, ids: [ ...seen ] });
  if (seen.size < want) {
    out({ error: `received ${seen.size} of ${want} messages in ${seconds}s` });
    process.exitCode = 1;
  }
}

async function push(endpoint, group, topic, want, seconds, poison) {
  const done = new Set();
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  const consumer = new PushConsumer({ endpoints: endpoint, consumerGroup: group, subscriptions: new Map([ [ topic, '*' ] ]),
    logger: quiet,
    messageListener: {
      async consume(m) {
        const body = m.body.toString();
        out({ received: m.messageId, body, attempt: m.deliveryAttempt, topic: m.topic });
        if (body === poison || (m.deliveryAttempt || 1) < 2) return ConsumeResult.FAILURE;
        done.add(m.messageId);
        if (done.size >= want) finish();
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await consumer.startup();
  const timer = setTimeout(finish, seconds * 1000);
  await finished;
  clearTimeout(timer);
  await new Promise((resolve) => setTimeout(resolve, 500)); // the last acks go out
  await consumer.shutdown();
  if (done.size < want) {
    out({ error: `consumed ${done.size} of ${want} messages in ${seconds}s` });
    process.exitCode = 1;
  }
}

async function main() {
  const [ mode, ...args ] = process.argv.slice(2);
  if (mode === 'produce') {
    await produce(...args);
  } else if (mode === 'push') {
    await push(args[0], args[1], args[2], Number(args[3]), Number(args[4]), args[5]);
  } else if (mode === 'paced') {
    await paced(args[0], args[1], Number(args[2]), args[3], Number(args[4]));
  } else if (mode === 'send') {
    await sendN(args[0], args[1], Number(args[2]), args[3]);
  } else if (mode === 'recall') {
    await recall(args[0], args[1], Number(args[2]));
  } else if (mode === 'drain') {
    await drain(args[0], args[1], args[2], Number(args[3]), Number(args[4]), Number(args[5]));
  } else if (mode === 'consume') {
    await consume(args[0], args[1], args[2], Number(args[3]), Number(args[4]), args[5]);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
}

main().then(() => process.exit(process.exitCode || 0), (err) => {
  out({ error: String(err && err.stack || err) });
  process.exit(1);
});
