// The consumer groups page (list and lag over time) and a group's page (members, lag per queue, reset).

import { el, api, apiPath, replace, table, link, field, kv, notice, errorNotice, fmtInt, fmtRate, fmtTime, localInput, parseLocal } from './dom.js';
import { lineChart } from './chart.js';

function lagSeries(h) {
  return h.lag.map((s) => ({ name: s.group, points: s.points.map((p) => [p.t, p.lag]) }));
}

export function renderList(main, params, ctx) {
  const list = el('div', { id: 'group-list' }, 'Loading…');
  const chart = el('div', { class: 'charts' });
  replace(main, el('h1', null, 'Consumer groups'), list, el('h2', null, 'Lag over time'), chart);
  async function refresh() {
    let g;
    let h;
    try {
      [g, h] = await Promise.all([api('GET', '/api/groups'), api('GET', '/api/history')]);
    } catch (err) {
      replace(list, errorNotice(err));
      return;
    }
    replace(list, table([
      { title: 'Group', cell: (r) => link(r.group, ['group', r.group]) },
      { title: 'Members', cell: (r) => String(r.members), num: true },
      { title: 'Type', cell: (r) => r.type || '-' },
      { title: 'Model', cell: (r) => r.model || '-' },
      { title: 'Client version', cell: (r) => r.version || '-' },
      { title: 'Consume TPS', cell: (r) => fmtRate(r.tps), num: true },
      { title: 'Lag', cell: (r) => fmtInt(r.lag), num: true },
    ], g.groups, { id: 'groups-table', empty: 'No consumer group (a group is listed once it has a retry topic)', rowAttrs: (r) => ({ dataset: { group: r.group } }) }));
    replace(chart, lineChart(lagSeries(h), h.now, h.windowMs, { id: 'lag-chart', title: 'Messages not yet consumed, per group', unit: 'messages' }));
  }
  refresh();
  return { refresh };
}

// resetForm moves the group's offsets on a topic to a time, or to the start or end of each queue.
function resetForm(group, topics) {
  const topic = el('input', { name: 'topic', list: 'reset-topics', required: true, value: topics[0] || '', autocomplete: 'off' });
  const when = el('select', { name: 'when' },
    el('option', { value: 'time' }, 'the first message stored at or after'),
    el('option', { value: 'start' }, 'the start of each queue'),
    el('option', { value: 'end' }, 'the end of each queue (skip everything)'));
  const at = el('input', { name: 'time', type: 'datetime-local', step: 1, value: localInput(Date.now() - 3600e3) });
  when.addEventListener('change', () => { at.disabled = when.value !== 'time'; });
  const out = el('div', { class: 'result' });
  const form = el('form', { class: 'card', id: 'reset-form' },
    el('h2', null, 'Reset offset'),
    el('p', { class: 'muted' }, 'Online consumers are told to move to the new offsets; an offline group gets them committed.'),
    el('datalist', { id: 'reset-topics' }, topics.map((t) => el('option', { value: t }))),
    el('div', { class: 'row' }, field('Topic', topic), field('Move to', when), field('Time (local)', at)),
    el('button', { type: 'submit' }, 'Reset'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let ts = -1;
    if (when.value === 'start') ts = 0;
    if (when.value === 'time') {
      ts = parseLocal(at.value);
      if (Number.isNaN(ts)) {
        replace(out, notice('error', 'Give a time.'));
        return;
      }
    }
    if (!window.confirm(`Reset the offsets of ${group} on ${topic.value}?`)) return;
    try {
      const r = await api('POST', apiPath(['groups', group, 'reset']), { topic: topic.value.trim(), timestamp: ts });
      replace(out, notice('ok', `Offsets of ${r.queues.length} queues reset.`),
        table([
          { title: 'Broker', cell: (q) => q.brokerName },
          { title: 'Queue', cell: (q) => String(q.queueId), num: true },
          { title: 'New offset', cell: (q) => fmtInt(q.offset), num: true },
        ], r.queues, { id: 'reset-result' }));
    } catch (err) {
      replace(out, errorNotice(err));
    }
  });
  return form;
}

export function renderGroup(main, params, ctx) {
  const name = params.get('name');
  const head = el('div', null, 'Loading…');
  const chart = el('div', { class: 'charts' });
  const detail = el('div');
  const formSlot = el('div');
  replace(main, el('h1', null, 'Consumer group ', el('code', { id: 'group-name' }, name)), head,
    el('h2', null, 'Lag over time'), chart, detail, formSlot);
  async function refresh() {
    let g;
    let h;
    try {
      [g, h] = await Promise.all([api('GET', apiPath(['groups', name])), api('GET', apiPath(['history'], { group: name }))]);
    } catch (err) {
      replace(head, errorNotice(err));
      return;
    }
    replace(head,
      el('div', { class: 'stats' },
        el('div', { class: 'stat' }, el('span', null, 'Lag'), el('strong', { id: 'lag-total', dataset: { lag: String(g.lag) } }, fmtInt(g.lag))),
        el('div', { class: 'stat' }, el('span', null, 'Consume TPS'), el('strong', null, fmtRate(g.tps))),
        el('div', { class: 'stat' }, el('span', null, 'Members'), el('strong', { id: 'member-count' }, String(g.members.length))),
        el('div', { class: 'stat' }, el('span', null, 'State'), el('strong', { class: g.online ? 'good' : 'bad' }, g.online ? 'online' : 'offline'))),
      g.online ? kv([['Consume type', g.consumeType], ['Message model', g.messageModel], ['Consume from', g.consumeFromWhere]]) : null);
    replace(chart, lineChart(lagSeries(h), h.now, h.windowMs, { id: 'group-lag-chart', title: 'Messages not yet consumed', unit: 'messages' }));
    replace(detail,
      el('h2', null, 'Lag per queue'),
      table([
        { title: 'Topic', cell: (q) => link(q.topic, ['topic', q.topic]) },
        { title: 'Broker', cell: (q) => q.brokerName },
        { title: 'Queue', cell: (q) => String(q.queueId), num: true },
        { title: 'Broker offset', cell: (q) => fmtInt(q.brokerOffset), num: true },
        { title: 'Consumer offset', cell: (q) => fmtInt(q.consumerOffset), num: true },
        { title: 'Lag', cell: (q) => fmtInt(q.lag), num: true },
        { title: 'Client', cell: (q) => q.client || '-' },
        { title: 'Last consumed', cell: (q) => fmtTime(q.lastTimestamp) },
      ], g.queues, { id: 'lag-table', empty: 'The group has committed no offset', foot: ['Total', '', '', fmtInt(g.brokerOffset), fmtInt(g.consumerOffset), fmtInt(g.lag), '', ''] }),
      el('h2', null, 'Members'),
      table([
        { title: 'Client ID', cell: (c) => link(c.clientId, ['client'], { group: name, id: c.clientId }) },
        { title: 'Address', cell: (c) => c.clientAddr },
        { title: 'Language', cell: (c) => c.language },
        { title: 'Version', cell: (c) => c.version },
      ], g.members, { id: 'members-table', empty: 'No member online' }),
      el('h2', null, 'Subscriptions'),
      table([
        { title: 'Topic', cell: (s) => link(s.topic, ['topic', s.topic]) },
        { title: 'Expression', cell: (s) => s.expression },
      ], g.subscriptions, { id: 'subscriptions-table', empty: 'None known (the group is not online)' }));
    if (!formSlot.firstChild) {
      const topics = [...new Set(g.subscriptions.map((s) => s.topic).concat(g.queues.map((q) => q.topic)))]
        .filter((t) => !t.startsWith('%RETRY%'));
      formSlot.appendChild(resetForm(name, topics));
    }
  }
  refresh();
  return { refresh };
}

// renderClient is one consumer client's own report (GET_CONSUMER_RUNNING_INFO): its version, subscriptions,
// the queues it holds with their process-queue state, and its rates per topic.
export function renderClient(main, params, ctx) {
  const group = params.get('group') || '';
  const id = params.get('id') || '';
  const body = el('div', null, 'Loading…');
  replace(main, el('h1', null, 'Consumer ', el('code', { id: 'client-id' }, id)),
    el('p', null, 'Of group ', link(group, ['group', group])), body);
  if (!group || !id) {
    replace(body, notice('error', 'Give the group and the client ID.'));
    return {};
  }
  async function refresh() {
    let ri;
    try {
      ri = await api('GET', apiPath(['groups', group, 'clients', id]));
    } catch (err) {
      replace(body, errorNotice(err));
      return;
    }
    const props = Object.keys(ri.properties).sort().map((k) => [k, ri.properties[k]]);
    replace(body,
      kv([
        ['Client version', el('span', { id: 'client-version' }, ri.version || '-')],
        ['Consume type', ri.consumeType || '-'],
        ['Started', fmtTime(ri.startedAt)],
      ], 'client-fields'),
      el('h2', null, 'Subscriptions'),
      table([
        { title: 'Topic', cell: (s) => link(s.topic, ['topic', s.topic]) },
        { title: 'Expression', cell: (s) => s.expression },
      ], ri.subscriptions, { id: 'client-subscriptions', empty: 'None reported' }),
      el('h2', null, 'Queues held'),
      table([
        { title: 'Topic', cell: (q) => q.topic },
        { title: 'Broker', cell: (q) => q.brokerName },
        { title: 'Queue', cell: (q) => String(q.queueId), num: true },
        { title: 'Committed', cell: (q) => fmtInt(q.commitOffset), num: true },
        { title: 'Cached', cell: (q) => `${fmtInt(q.cachedMsgCount)} (${fmtInt(q.cachedMsgMinOffset)}–${fmtInt(q.cachedMsgMaxOffset)})`, num: true },
        { title: 'Cached MiB', cell: (q) => fmtInt(q.cachedMsgSizeInMiB), num: true },
        { title: 'Locked', cell: (q) => (q.locked ? 'yes' : 'no') },
        { title: 'Last pull', cell: (q) => fmtTime(q.lastPullTimestamp) },
        { title: 'Last consume', cell: (q) => fmtTime(q.lastConsumeTimestamp) },
      ], ri.queues, { id: 'client-queues', empty: 'The client holds no queue', rowAttrs: (q) => ({ dataset: { queue: `${q.topic}/${q.brokerName}/${q.queueId}` } }) }),
      el('h2', null, 'Rates per topic'),
      table([
        { title: 'Topic', cell: (t) => t.topic },
        { title: 'Pull TPS', cell: (t) => fmtRate(t.pullTPS), num: true },
        { title: 'Pull RT (ms)', cell: (t) => fmtRate(t.pullRT), num: true },
        { title: 'Consume OK TPS', cell: (t) => fmtRate(t.consumeOKTPS), num: true },
        { title: 'Consume failed TPS', cell: (t) => fmtRate(t.consumeFailedTPS), num: true },
        { title: 'Consume RT (ms)', cell: (t) => fmtRate(t.consumeRT), num: true },
        { title: 'Failed (last hour)', cell: (t) => fmtInt(t.consumeFailedMsgs), num: true },
      ], ri.status, { id: 'client-status', empty: 'None reported' }),
      el('h2', null, 'Properties'),
      table([{ title: 'Name', cell: (p) => p[0] }, { title: 'Value', cell: (p) => p[1] }], props, { id: 'client-properties' }));
  }
  refresh();
  return { refresh };
}
