// The messages page (by key, by id, by time range), a message's page (fields, properties, body as text or
// hex, where it was delivered) and the producers page.

import { el, api, apiPath, replace, table, link, field, kv, notice, errorNotice, fmtInt, fmtTime, localInput, parseLocal, b64bytes, utf8, hexDump, preview } from './dom.js';

const MODES = [['key', 'By key'], ['id', 'By ID'], ['time', 'By time']];

function topicList(id) {
  const dl = el('datalist', { id });
  api('GET', '/api/topics').then((t) => {
    replace(dl, t.topics.filter((x) => x.kind !== 'system').map((x) => el('option', { value: x.name })));
  }, () => {});
  return dl;
}

function resultsTable(msgs) {
  return table([
    { title: 'Message ID', cell: (m) => link(m.msgId, ['message', m.offsetMsgId], { topic: m.topic }, { class: 'mono' }) },
    { title: 'Tags', cell: (m) => m.tags || '-' },
    { title: 'Keys', cell: (m) => m.keys || '-' },
    { title: 'Queue', cell: (m) => String(m.queueId), num: true },
    { title: 'Offset', cell: (m) => fmtInt(m.queueOffset), num: true },
    { title: 'Stored', cell: (m) => fmtTime(m.storeTimestamp) },
    { title: 'Size', cell: (m) => fmtInt(m.bodySize), num: true },
    { title: 'Body', cell: (m) => el('span', { class: 'preview' }, preview(b64bytes(m.preview), m.bodySize)) },
  ], msgs, { id: 'messages-table', empty: 'No message found', rowAttrs: (m) => ({ dataset: { msgid: m.msgId, keys: m.keys } }) });
}

export function renderSearch(main, params, ctx) {
  const mode = MODES.some(([m]) => m === params.get('mode')) ? params.get('mode') : 'key';
  const topic = el('input', { name: 'topic', list: 'msg-topics', value: params.get('topic') || '', autocomplete: 'off', required: mode !== 'id' });
  const key = el('input', { name: 'key', value: params.get('key') || '', required: true, autocomplete: 'off' });
  const id = el('input', { name: 'id', value: params.get('id') || '', required: true, size: 34, autocomplete: 'off' });
  const now = Date.now();
  const begin = el('input', { name: 'begin', type: 'datetime-local', step: 1, value: localInput(Number(params.get('begin')) || now - 3600e3) });
  const end = el('input', { name: 'end', type: 'datetime-local', step: 1, value: localInput(Number(params.get('end')) || now + 60e3) });
  const max = el('input', { name: 'max', type: 'number', min: 1, max: 1000, value: params.get('max') || '32' });
  // Built for the mode shown only: a node has one parent, and every mode has the topic input.
  const controls = {
    key: () => [field('Topic', topic), field('Key', key)],
    id: () => [field('Message ID', id, 'offset ID, or unique ID with its topic'), field('Topic', topic, 'needed for a unique ID')],
    time: () => [field('Topic', topic), field('From (local)', begin), field('To (local)', end), field('At most, per queue', max)],
  }[mode]();
  const results = el('div', { id: 'message-results' });
  const form = el('form', { class: 'card', id: 'message-search' },
    el('div', { class: 'row' }, controls), el('button', { type: 'submit' }, 'Search'));
  replace(main, el('h1', null, 'Messages'),
    el('nav', { class: 'tabs' }, MODES.map(([m, t]) => link(t, ['messages'], { mode: m, topic: topic.value }, { class: m === mode ? 'active' : null }))),
    topicList('msg-topics'), form, results);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    if (mode === 'id') {
      ctx.go(`#/message/${encodeURIComponent(id.value.trim())}` + (topic.value.trim() ? `?topic=${encodeURIComponent(topic.value.trim())}` : ''));
      return;
    }
    const q = { mode, topic: topic.value.trim() };
    if (mode === 'key') q.key = key.value.trim();
    if (mode === 'time') Object.assign(q, { begin: parseLocal(begin.value), end: parseLocal(end.value), max: max.value });
    ctx.go('#/messages?' + new URLSearchParams(q).toString());
  });
  if (mode === 'id' || !topic.value || (mode === 'key' && !key.value) || (mode === 'time' && !params.get('begin'))) return;
  replace(results, notice('info', 'Searching…'));
  const query = mode === 'key' ? { topic: topic.value, key: key.value }
    : { topic: topic.value, begin: params.get('begin'), end: params.get('end'), max: max.value };
  api('GET', apiPath(['messages'], query)).then(
    (r) => replace(results, el('p', { class: 'muted' }, `${r.messages.length} message${r.messages.length === 1 ? '' : 's'}`), resultsTable(r.messages)),
    (err) => replace(results, errorNotice(err)));
}

// deliveryVerdict explains a trace row: the group's offset on the message's queue against the message's
// queue offset.
function deliveryVerdict(d, m) {
  if (d.consumerOffset === undefined || d.consumerOffset === null) return 'no offset committed on this queue';
  const rel = d.consumerOffset > m.queueOffset ? '>' : '≤';
  return `group offset ${fmtInt(d.consumerOffset)} ${rel} message offset ${fmtInt(m.queueOffset)}`;
}

export function renderMessage(main, params, ctx) {
  const id = params.get('id');
  const topic = params.get('topic') || '';
  const body = el('div', null, 'Loading…');
  replace(main, el('h1', null, 'Message ', el('code', { id: 'message-id' }, id)), body);
  api('GET', apiPath(['messages', id], { topic })).then((m) => {
    const bytes = b64bytes(m.body);
    const text = utf8(bytes);
    const pre = el('pre', { id: 'message-body', class: 'body' });
    const showText = el('button', { type: 'button', id: 'body-text', disabled: text === null }, 'Text');
    const showHex = el('button', { type: 'button', id: 'body-hex' }, 'Hex');
    const show = (asText) => {
      replace(pre, asText ? text : hexDump(bytes));
      showText.classList.toggle('active', asText);
      showHex.classList.toggle('active', !asText);
    };
    showText.addEventListener('click', () => show(true));
    showHex.addEventListener('click', () => show(false));
    show(text !== null);
    const props = Object.keys(m.properties || {}).sort().map((k) => [k, m.properties[k]]);
    replace(body,
      kv([
        ['Message ID', el('span', { class: 'mono' }, m.msgId)],
        ['Offset ID', el('span', { class: 'mono' }, m.offsetMsgId)],
        ['Topic', link(m.topic, ['topic', m.topic])],
        ['Tags', m.tags || '-'],
        ['Keys', m.keys || '-'],
        ['Queue', `${m.queueId} at offset ${fmtInt(m.queueOffset)}`],
        ['CommitLog offset', fmtInt(m.commitLogOffset)],
        ['Born', `${fmtTime(m.bornTimestamp)} at ${m.bornHost}`],
        ['Stored', `${fmtTime(m.storeTimestamp)} at ${m.storeHost}`],
        ['Reconsume times', String(m.reconsumeTimes)],
        ['Size', `${fmtInt(bytes.length)} bytes of body, ${fmtInt(m.storeSize)} stored`],
      ], 'message-fields'),
      el('h2', null, 'Properties'),
      table([{ title: 'Name', cell: (p) => p[0] }, { title: 'Value', cell: (p) => p[1] }], props, { id: 'properties-table' }),
      el('h2', null, 'Body ', el('span', { class: 'buttons' }, showText, showHex)),
      text === null ? el('p', { class: 'muted' }, 'The body is not UTF-8 text.') : null,
      pre,
      el('h2', null, 'Delivery'),
      el('p', { class: 'muted' }, 'For each group that consumes the topic: its committed offset on the message\'s queue against the message\'s queue offset.'),
      table([
        { title: 'Group', cell: (d) => link(d.group, ['group', d.group]) },
        { title: 'State', cell: (d) => el('span', { class: 'tag ' + d.state.toLowerCase() }, d.state) },
        { title: 'Offsets', cell: (d) => deliveryVerdict(d, m) },
        { title: 'Detail', cell: (d) => d.detail || '' },
      ], m.trace || [], { id: 'trace-table', empty: 'No consumer group consumes this topic' }),
      traceSection(m),
      consumeForm(m));
  }, (err) => replace(body, errorNotice(err)));
}

const TRACE_STATUS = (r) => (r.success ? el('span', { class: 'good' }, 'success') : el('span', { class: 'bad' }, 'failed'));

// traceSection shows the message's trace records (clients with tracing on send them to the trace topic): the
// send, and each consumer group's SubBefore and SubAfter.
function traceSection(m) {
  const traceTopic = el('input', { name: 'traceTopic', value: 'RMQ_SYS_TRACE_TOPIC', required: true, autocomplete: 'off' });
  const out = el('div', { id: 'msgtrace' }, 'Loading…');
  const load = () => {
    replace(out, 'Loading…');
    api('GET', apiPath(['messages', m.msgId, 'trace'], { traceTopic: traceTopic.value.trim() })).then((t) => replace(out,
      table([
        { title: 'Type', cell: (r) => r.type },
        { title: 'Group', cell: (r) => r.group || '-' },
        { title: 'Client', cell: (r) => r.clientHost || '-' },
        { title: 'Time', cell: (r) => fmtTime(r.timestamp) },
        { title: 'Cost (ms)', cell: (r) => (r.type === 'SubBefore' ? '-' : String(r.costTime)), num: true },
        { title: 'Status', cell: (r) => (r.type === 'SubBefore' ? '-' : TRACE_STATUS(r)) },
        { title: 'Detail', cell: (r) => traceDetail(r) },
      ], t.records, { id: 'msgtrace-table', empty: `No trace of this message in ${t.traceTopic} (is tracing on in its clients?)`,
        rowAttrs: (r) => ({ dataset: { type: r.type, group: r.group || '' } }) })),
    (err) => replace(out, errorNotice(err)));
  };
  const form = el('form', { class: 'row', id: 'msgtrace-form' }, field('Trace topic', traceTopic), el('button', { type: 'submit', class: 'secondary' }, 'Show'));
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    load();
  });
  load();
  return [el('h2', null, 'Message trace'), form, out];
}

function traceDetail(r) {
  switch (r.type) {
    case 'Pub': return `stored at ${r.storeHost || '-'}` + (r.offsetMsgId ? ` as ${r.offsetMsgId}` : '') + `, ${fmtInt(r.bodyLength)} bytes`;
    case 'SubBefore': return `request ${r.requestId}, retry ${r.retryTimes || 0}`;
    case 'SubAfter': return `request ${r.requestId}`;
    default: return r.transactionState || '';
  }
}

// consumeForm has one client of a group consume the message now (CONSUME_MESSAGE_DIRECTLY), whatever its
// offsets.
function consumeForm(m) {
  const groups = (m.trace || []).map((d) => d.group);
  const group = el('input', { name: 'group', list: 'consume-groups', required: true, value: groups[0] || '', autocomplete: 'off' });
  const client = el('select', { name: 'clientId', required: true });
  const out = el('div', { class: 'result' });
  const loadClients = () => {
    const g = group.value.trim();
    if (!g) return;
    api('GET', apiPath(['groups', g])).then((info) => {
      replace(client, info.members.map((c) => el('option', { value: c.clientId }, `${c.clientId} (${c.language} ${c.version})`)));
      if (!info.members.length) replace(out, notice('info', `No member of ${g} is online.`));
    }, (err) => replace(out, errorNotice(err)));
  };
  group.addEventListener('change', loadClients);
  loadClients();
  const form = el('form', { class: 'card', id: 'consume-form' },
    el('h2', null, 'Resend to a consumer'),
    el('p', { class: 'muted' }, 'One client of the group consumes the message now, whatever the group\'s offsets.'),
    el('datalist', { id: 'consume-groups' }, groups.map((g) => el('option', { value: g }))),
    el('div', { class: 'row' }, field('Group', group), field('Client', client)),
    el('button', { type: 'submit' }, 'Consume now'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(out, notice('info', 'Working…'));
    try {
      const r = await api('POST', apiPath(['messages', m.offsetMsgId, 'consume']), { topic: m.topic, group: group.value.trim(), clientId: client.value });
      replace(out, notice(r.consumeResult === 'CR_SUCCESS' ? 'ok' : 'error',
        `${r.consumeResult} in ${r.spentTimeMills} ms` + (r.remark ? `: ${r.remark}` : '')));
    } catch (err) {
      replace(out, errorNotice(err));
    }
  });
  return form;
}

export function renderProducers(main, params, ctx) {
  const topic = el('input', { name: 'topic', list: 'producer-topics', value: params.get('topic') || '', required: true, autocomplete: 'off' });
  const group = el('input', { name: 'group', value: params.get('group') || '', required: true, autocomplete: 'off' });
  const results = el('div', { id: 'producer-results' });
  const form = el('form', { class: 'card', id: 'producer-search' },
    el('p', { class: 'muted' }, 'The brokers list producers by producer group: give the group and a topic it sends to.'),
    el('div', { class: 'row' }, field('Topic', topic), field('Producer group', group)), el('button', { type: 'submit' }, 'Show'));
  replace(main, el('h1', null, 'Producers'), topicList('producer-topics'), form, results);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.go('#/producers?' + new URLSearchParams({ topic: topic.value.trim(), group: group.value.trim() }).toString());
  });
  if (!topic.value || !group.value) return;
  api('GET', apiPath(['producers'], { topic: topic.value, group: group.value })).then((r) => replace(results,
    table([
      { title: 'Client ID', cell: (c) => c.clientId },
      { title: 'Address', cell: (c) => c.clientAddr },
      { title: 'Language', cell: (c) => c.language },
      { title: 'Version', cell: (c) => c.version },
    ], r.connections, { id: 'producers-table', empty: `No producer of group ${group.value} is connected to the brokers of ${topic.value}` })),
  (err) => replace(results, errorNotice(err)));
}
