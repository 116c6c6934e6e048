// The topics page (list, search, create) and a topic's page (route, queue offsets, groups, update, delete).

import { el, api, apiPath, replace, table, link, field, notice, errorNotice, fmtInt, fmtTime } from './dom.js';

const PERMS = [['6', 'read and write (6)'], ['4', 'read only (4)'], ['2', 'write only (2)']];

function permText(p) {
  return (p & 4 ? 'R' : '-') + (p & 2 ? 'W' : '-');
}

function permSelect(name, value) {
  return el('select', { name }, PERMS.map(([v, t]) => el('option', { value: v, selected: String(value) === v }, t)));
}

// topicForm is the create/update form. existing: the topic being updated (its name is fixed).
function topicForm(clusters, existing, onDone) {
  const q = existing ? existing.brokers[0] || {} : {};
  const name = el('input', { name: 'topic', required: true, value: existing ? existing.name : '', readonly: !!existing, autocomplete: 'off' });
  const cluster = el('select', { name: 'cluster' }, clusters.map((c) => el('option', { value: c, selected: q.cluster === c }, c)));
  const read = el('input', { name: 'readQueues', type: 'number', min: 1, max: 1024, value: String(q.readQueues || 8) });
  const write = el('input', { name: 'writeQueues', type: 'number', min: 1, max: 1024, value: String(q.writeQueues || 8) });
  const perm = permSelect('perm', q.perm || 6);
  const order = el('input', { name: 'order', type: 'checkbox', checked: existing ? existing.order : false });
  const out = el('div', { class: 'result' });
  const form = el('form', { class: 'card', id: existing ? 'update-topic-form' : 'create-topic-form' },
    el('h2', null, existing ? 'Update topic' : 'Create topic'),
    el('div', { class: 'row' }, field('Topic', name), field('Cluster', cluster), field('Read queues', read),
      field('Write queues', write), field('Permission', perm), field('Ordered', order)),
    el('button', { type: 'submit' }, existing ? 'Update' : 'Create'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(out, notice('info', 'Working…'));
    const spec = { topic: name.value.trim(), cluster: cluster.value, readQueues: Number(read.value),
      writeQueues: Number(write.value), perm: Number(perm.value), order: order.checked };
    try {
      const r = await api('POST', '/api/topics', spec);
      replace(out, notice('ok', `Topic ${spec.topic} ${existing ? 'updated' : 'created'} on ${r.brokers.join(', ')}.`));
      onDone(spec.topic);
    } catch (err) {
      replace(out, errorNotice(err));
    }
  });
  return form;
}

export function renderList(main, params, ctx) {
  const search = el('input', { type: 'search', id: 'topic-search', placeholder: 'Search topics', value: params.get('q') || '', autocomplete: 'off' });
  const showSystem = el('input', { type: 'checkbox', id: 'show-system' });
  const showGroups = el('input', { type: 'checkbox', id: 'show-retry' });
  const list = el('div', { id: 'topic-list' }, 'Loading…');
  const formSlot = el('div');
  replace(main, el('h1', null, 'Topics'),
    el('div', { class: 'toolbar' }, search,
      el('label', null, showGroups, ' retry and dead-letter'), el('label', null, showSystem, ' system')),
    list, formSlot);
  let topics = [];
  function draw() {
    const q = search.value.trim().toLowerCase();
    const rows = topics.filter((t) => (t.kind === 'normal' || (t.kind === 'system' && showSystem.checked) ||
      ((t.kind === 'retry' || t.kind === 'dlq') && showGroups.checked)) && t.name.toLowerCase().includes(q));
    replace(list, el('p', { class: 'muted' }, `${rows.length} of ${topics.length} topics`),
      table([
        { title: 'Topic', cell: (t) => link(t.name, ['topic', t.name]) },
        { title: 'Kind', cell: (t) => el('span', { class: 'tag ' + t.kind }, t.kind) },
        { title: '', cell: (t) => link('messages', ['messages'], { mode: 'time', topic: t.name }) },
      ], rows, { id: 'topics-table', empty: 'No topic matches', rowAttrs: (t) => ({ dataset: { topic: t.name } }) }));
  }
  for (const c of [search, showSystem, showGroups]) c.addEventListener('input', draw);
  async function load() {
    try {
      const [t, c] = await Promise.all([api('GET', '/api/topics'), api('GET', '/api/cluster')]);
      topics = t.topics;
      draw();
      if (!formSlot.firstChild) {
        formSlot.appendChild(topicForm(c.clusters, null, () => load()));
      }
    } catch (err) {
      replace(list, errorNotice(err));
    }
  }
  load();
}

export function renderTopic(main, params, ctx) {
  const name = params.get('name');
  const body = el('div', null, 'Loading…');
  replace(main, el('h1', null, 'Topic ', el('code', { id: 'topic-name' }, name)),
    el('p', null, link('Browse its messages', ['messages'], { mode: 'time', topic: name }), ' · ',
      link('Producers', ['producers'], { topic: name })),
    body);
  async function load() {
    let t;
    let c;
    try {
      [t, c] = await Promise.all([api('GET', apiPath(['topics', name])), api('GET', '/api/cluster')]);
    } catch (err) {
      replace(body, errorNotice(err));
      return;
    }
    const total = t.queues.reduce((a, q) => a + (q.maxOffset - q.minOffset), 0);
    const del = el('button', { class: 'danger', id: 'delete-topic' }, 'Delete topic');
    const delOut = el('div', { class: 'result' });
    del.addEventListener('click', async () => {
      const clusters = [...new Set(t.brokers.map((b) => b.cluster))];
      if (!window.confirm(`Delete topic ${name} from cluster ${clusters.join(', ')} and the name servers?`)) return;
      try {
        for (const cl of clusters) await api('DELETE', apiPath(['topics', name], { cluster: cl }));
        ctx.go('#/topics');
      } catch (err) {
        replace(delOut, errorNotice(err));
      }
    });
    replace(body,
      el('h2', null, 'Route'),
      table([
        { title: 'Cluster', cell: (b) => b.cluster },
        { title: 'Broker', cell: (b) => b.brokerName },
        { title: 'Addresses', cell: (b) => Object.entries(b.addrs).map(([id, a]) => `${id}=${a}`).join(', ') },
        { title: 'Read queues', cell: (b) => String(b.readQueues), num: true },
        { title: 'Write queues', cell: (b) => String(b.writeQueues), num: true },
        { title: 'Perm', cell: (b) => permText(b.perm) },
      ], t.brokers, { id: 'route-table', empty: 'No broker routes this topic' }),
      el('h2', null, 'Queues'),
      table([
        { title: 'Broker', cell: (q) => q.brokerName },
        { title: 'Queue', cell: (q) => String(q.queueId), num: true },
        { title: 'Min offset', cell: (q) => fmtInt(q.minOffset), num: true },
        { title: 'Max offset', cell: (q) => fmtInt(q.maxOffset), num: true },
        { title: 'Messages', cell: (q) => fmtInt(q.maxOffset - q.minOffset), num: true },
        { title: 'Last stored', cell: (q) => fmtTime(q.lastUpdated) },
      ], t.queues, { id: 'queues-table', foot: ['Total', '', '', '', fmtInt(total), ''] }),
      el('h2', null, 'Consumer groups'),
      t.groups.length ? el('ul', { id: 'topic-groups' }, t.groups.map((g) => el('li', null, link(g, ['group', g])))) : el('p', { class: 'muted' }, 'No group consumes it.'),
      sendForm(name),
      topicForm(c.clusters, t, () => load()),
      el('div', { class: 'card' }, el('h2', null, 'Delete'), del, delOut));
  }
  load();
}

// sendForm sends a test message to the topic.
function sendForm(topic) {
  const tags = el('input', { name: 'tags', autocomplete: 'off' });
  const keys = el('input', { name: 'keys', autocomplete: 'off' });
  const body = el('textarea', { name: 'body', rows: 3, cols: 60, required: true });
  const out = el('div', { class: 'result', id: 'send-result' });
  const form = el('form', { class: 'card', id: 'send-message-form' },
    el('h2', null, 'Send a test message'),
    el('div', { class: 'row' }, field('Tag', tags), field('Keys', keys, 'separated by spaces'), field('Body', body)),
    el('button', { type: 'submit' }, 'Send'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(out, notice('info', 'Sending…'));
    try {
      const r = await api('POST', apiPath(['topics', topic, 'send']), { tags: tags.value.trim(), keys: keys.value.trim(), body: body.value });
      replace(out, notice('ok', `${r.status}: `, link(r.msgId, ['message', r.offsetMsgId], { topic }, { id: 'sent-message', class: 'mono' }),
        ` stored on ${r.brokerName} queue ${r.queueId} at offset ${fmtInt(r.queueOffset)}.`));
    } catch (err) {
      replace(out, errorNotice(err));
    }
  });
  return form;
}
