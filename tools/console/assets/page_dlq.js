// The dead-letter page: the messages a consumer group gave up on (%DLQ%<group>) in a time range, each
// viewable, resent one by one or together to the topic it was first sent to, and exported as a JSON file.

import { el, api, apiPath, replace, table, link, field, notice, errorNotice, fmtInt, fmtTime, localInput, parseLocal, b64bytes, preview } from './dom.js';

export function render(main, params, ctx) {
  const group = el('input', { name: 'group', value: params.get('group') || '', required: true, autocomplete: 'off' });
  const now = Date.now();
  const begin = el('input', { name: 'begin', type: 'datetime-local', step: 1, value: localInput(Number(params.get('begin')) || now - 24 * 3600e3) });
  const end = el('input', { name: 'end', type: 'datetime-local', step: 1, value: localInput(Number(params.get('end')) || now + 60e3) });
  const max = el('input', { name: 'max', type: 'number', min: 1, max: 1000, value: params.get('max') || '64' });
  const results = el('div', { id: 'dlq-results' });
  const form = el('form', { class: 'card', id: 'dlq-search' },
    el('p', { class: 'muted' }, 'A consumer group\'s dead letters are the messages it failed to consume more often than its retry budget allows; they are kept in %DLQ%<group>.'),
    el('div', { class: 'row' }, field('Consumer group', group), field('From (local)', begin), field('To (local)', end), field('At most, per queue', max)),
    el('button', { type: 'submit' }, 'Search'));
  replace(main, el('h1', null, 'Dead-letter messages'), form, results);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    ctx.go('#/dlq?' + new URLSearchParams({ group: group.value.trim(), begin: parseLocal(begin.value), end: parseLocal(end.value), max: max.value }).toString());
  });
  if (!group.value || !params.get('begin')) return;
  const query = { group: group.value, begin: params.get('begin'), end: params.get('end'), max: max.value };
  replace(results, notice('info', 'Searching…'));
  api('GET', apiPath(['dlq'], query)).then((r) => showResults(results, group.value, r, query), (err) => replace(results, errorNotice(err)));
}

function showResults(results, group, r, query) {
  const boxes = new Map();
  const out = el('div', { class: 'result', id: 'dlq-resend-result' });
  const resend = async (ids) => {
    if (!ids.length) {
      replace(out, notice('error', 'Select the messages to resend.'));
      return;
    }
    if (!window.confirm(`Resend ${ids.length} message${ids.length === 1 ? '' : 's'} of ${group} to the topics they were first sent to?`)) return;
    replace(out, notice('info', 'Resending…'));
    try {
      const res = await api('POST', '/api/dlq/resend', { group, ids });
      const failed = res.results.filter((x) => x.error).length;
      replace(out, notice(failed ? 'error' : 'ok', `${res.results.length - failed} of ${res.results.length} resent.`),
        table([
          { title: 'Dead letter', cell: (x) => el('span', { class: 'mono' }, x.msgId) },
          { title: 'To topic', cell: (x) => x.topic || '-' },
          { title: 'Result', cell: (x) => (x.error ? el('span', { class: 'bad' }, x.error) : `${x.result.status} ${x.result.msgId}`) },
        ], res.results, { id: 'dlq-resend-table', rowAttrs: (x) => ({ dataset: { msgid: x.msgId, ok: x.error ? 'false' : 'true' } }) }));
    } catch (err) {
      replace(out, errorNotice(err));
    }
  };
  const all = el('input', { type: 'checkbox', id: 'dlq-select-all', title: 'Select all' });
  all.addEventListener('change', () => { for (const b of boxes.values()) b.checked = all.checked; });
  const rows = table([
    { title: all, cell: (m) => { const b = el('input', { type: 'checkbox', class: 'dlq-select', value: m.offsetMsgId }); boxes.set(m.offsetMsgId, b); return b; } },
    { title: 'Message ID', cell: (m) => link(m.msgId, ['message', m.offsetMsgId], { topic: r.topic }, { class: 'mono' }) },
    { title: 'Original topic', cell: (m) => m.originTopic || '-' },
    { title: 'Tags', cell: (m) => m.tags || '-' },
    { title: 'Keys', cell: (m) => m.keys || '-' },
    { title: 'Tried', cell: (m) => String(m.reconsumeTimes), num: true },
    { title: 'Stored', cell: (m) => fmtTime(m.storeTimestamp) },
    { title: 'Body', cell: (m) => el('span', { class: 'preview' }, preview(b64bytes(m.preview), m.bodySize)) },
    { title: '', cell: (m) => el('button', { type: 'button', class: 'secondary dlq-resend-one', onclick: () => resend([m.offsetMsgId]) }, 'Resend') },
  ], r.messages, { id: 'dlq-table', empty: `No dead-letter message of ${group} in this time range`, rowAttrs: (m) => ({ dataset: { msgid: m.msgId, offsetid: m.offsetMsgId } }) });
  const selected = () => [...boxes.values()].filter((b) => b.checked).map((b) => b.value);
  replace(results,
    el('p', { class: 'muted' }, `${r.messages.length} message${r.messages.length === 1 ? '' : 's'} in ${r.topic} · `,
      el('a', { id: 'dlq-export', href: apiPath(['dlq', 'export'], query), download: '' }, 'Export as JSON')),
    rows,
    el('div', { class: 'buttons' },
      el('button', { type: 'button', id: 'dlq-resend-selected', onclick: () => resend(selected()) }, 'Resend selected'),
      el('button', { type: 'button', class: 'secondary', id: 'dlq-resend-all', onclick: () => resend(r.messages.map((m) => m.offsetMsgId)) }, `Resend all ${fmtInt(r.messages.length)}`)),
    out);
}
