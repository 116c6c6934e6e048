// The subscription groups page: every master's consumer-group configs, and a form to create, update or
// delete one (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP on a cluster's masters).

import { el, api, apiPath, replace, table, link, field, notice, errorNotice } from './dom.js';

const yes = (b) => (b ? 'yes' : 'no');

// groupForm edits one group's config; existing fills it (its name is then fixed).
function groupForm(clusters, existing, onDone) {
  const c = existing ? existing.config : { consumeEnable: true, retryQueueNums: 1, retryMaxTimes: 16, whichBrokerWhenConsumeSlowly: 1, notifyConsumerIdsChangedEnable: true };
  const name = el('input', { name: 'groupName', required: true, value: c.groupName || '', readonly: !!existing, autocomplete: 'off' });
  const cluster = el('select', { name: 'cluster' }, clusters.map((x) => el('option', { value: x, selected: existing && existing.cluster === x }, x)));
  const num = (n, v, lo) => el('input', { name: n, type: 'number', min: lo, max: 1024, value: String(v) });
  const box = (n, v) => el('input', { name: n, type: 'checkbox', checked: !!v });
  const retryMax = num('retryMaxTimes', c.retryMaxTimes, -1);
  const retryQueues = num('retryQueueNums', c.retryQueueNums, 0);
  const brokerId = num('brokerId', c.brokerId || 0, 0);
  const slow = num('whichBrokerWhenConsumeSlowly', c.whichBrokerWhenConsumeSlowly, 0);
  const enable = box('consumeEnable', c.consumeEnable);
  const broadcast = box('consumeBroadcastEnable', c.consumeBroadcastEnable);
  const fromMin = box('consumeFromMinEnable', c.consumeFromMinEnable);
  const notify = box('notifyConsumerIdsChangedEnable', c.notifyConsumerIdsChangedEnable);
  const out = el('div', { class: 'result' });
  const form = el('form', { class: 'card', id: existing ? 'update-subgroup-form' : 'create-subgroup-form' },
    el('h2', null, existing ? `Update ${c.groupName}` : 'Create subscription group'),
    el('div', { class: 'row' }, field('Group', name), field('Cluster', cluster), field('Retry max times', retryMax),
      field('Retry queues', retryQueues), field('Consume from broker ID', brokerId), field('Broker ID when slow', slow)),
    el('div', { class: 'row' }, field('Consume enabled', enable), field('Broadcast', broadcast), field('From min offset', fromMin),
      field('Notify ID changes', notify)),
    el('button', { type: 'submit' }, existing ? 'Update' : 'Create'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(out, notice('info', 'Working…'));
    const config = { groupName: name.value.trim(), consumeEnable: enable.checked, consumeFromMinEnable: fromMin.checked,
      consumeBroadcastEnable: broadcast.checked, retryQueueNums: Number(retryQueues.value), retryMaxTimes: Number(retryMax.value),
      brokerId: Number(brokerId.value), whichBrokerWhenConsumeSlowly: Number(slow.value), notifyConsumerIdsChangedEnable: notify.checked };
    try {
      const r = await api('POST', '/api/subgroups', { cluster: cluster.value, config });
      replace(out, notice('ok', `Subscription group ${config.groupName} ${existing ? 'updated' : 'created'} on ${r.brokers.join(', ')}.`));
      onDone();
    } catch (err) {
      replace(out, errorNotice(err));
    }
  });
  return form;
}

export function render(main, params, ctx) {
  const search = el('input', { type: 'search', id: 'subgroup-search', placeholder: 'Search groups', autocomplete: 'off' });
  const showSystem = el('input', { type: 'checkbox', id: 'subgroup-show-system' });
  const list = el('div', { id: 'subgroup-list' }, 'Loading…');
  const editSlot = el('div', { id: 'subgroup-edit' });
  const createSlot = el('div');
  const out = el('div', { class: 'result', id: 'subgroup-delete-result' });
  replace(main, el('h1', null, 'Subscription groups'),
    el('div', { class: 'toolbar' }, search, el('label', null, showSystem, ' system groups')), list, out, editSlot, createSlot);
  let groups = [];
  let clusters = [];
  const remove = async (g) => {
    if (!window.confirm(`Delete subscription group ${g.config.groupName} (and its offsets) from cluster ${g.cluster}?`)) return;
    try {
      const r = await api('DELETE', apiPath(['subgroups', g.config.groupName], { cluster: g.cluster }));
      replace(out, notice('ok', `Subscription group ${g.config.groupName} deleted from ${r.brokers.join(', ')}.`));
      replace(editSlot);
      load();
    } catch (err) {
      replace(out, errorNotice(err));
    }
  };
  function draw() {
    const q = search.value.trim().toLowerCase();
    const rows = groups.filter((g) => (showSystem.checked || !/^(CID_RMQ_SYS_|TOOLS_CONSUMER$|FILTERSRV_CONSUMER$|SELF_TEST_C_GROUP$|CID_ONSAPI_|CID_ONS-HTTP-PROXY$|CID_SYS_RMQ_TRANS$)/.test(g.config.groupName)) &&
      g.config.groupName.toLowerCase().includes(q));
    replace(list, table([
      { title: 'Group', cell: (g) => link(g.config.groupName, ['group', g.config.groupName]) },
      { title: 'Broker', cell: (g) => `${g.cluster} / ${g.brokerName}` },
      { title: 'Consume', cell: (g) => yes(g.config.consumeEnable) },
      { title: 'Broadcast', cell: (g) => yes(g.config.consumeBroadcastEnable) },
      { title: 'Retry max', cell: (g) => String(g.config.retryMaxTimes), num: true },
      { title: 'Retry queues', cell: (g) => String(g.config.retryQueueNums), num: true },
      { title: 'Broker ID', cell: (g) => `${g.config.brokerId} (slow: ${g.config.whichBrokerWhenConsumeSlowly})` },
      { title: '', cell: (g) => el('span', { class: 'buttons' },
        el('button', { type: 'button', class: 'secondary subgroup-edit', onclick: () => replace(editSlot, groupForm(clusters, g, load)) }, 'Edit'),
        el('button', { type: 'button', class: 'danger subgroup-delete', onclick: () => remove(g) }, 'Delete')) },
    ], rows, { id: 'subgroups-table', empty: 'No subscription group matches', rowAttrs: (g) => ({ dataset: { group: g.config.groupName, broker: g.brokerName } }) }));
  }
  for (const c of [search, showSystem]) c.addEventListener('input', draw);
  async function load() {
    try {
      const [g, c] = await Promise.all([api('GET', '/api/subgroups'), api('GET', '/api/cluster')]);
      groups = g.groups;
      clusters = c.clusters;
      draw();
      if (!createSlot.firstChild) createSlot.appendChild(groupForm(clusters, null, load));
    } catch (err) {
      replace(list, errorNotice(err));
    }
  }
  load();
}
