// The cluster page: brokers per cluster and broker group, and their throughput over the last minutes.

import { el, api, apiPath, replace, table, link, kv, fmtRate, fmtPct, errorNotice, notice } from './dom.js';
import { lineChart } from './chart.js';

function brokerLabel(b) {
  return `${b.brokerName}#${b.brokerId} ${b.addr}`;
}

function roleText(b) {
  return b.role || (b.brokerId === 0 ? 'MASTER' : 'SLAVE');
}

// raftRole is the node's Raft role; a leader that does not take sends yet (its term's barrier is not applied)
// says so.
function raftRole(r) {
  const role = r.role === 'Leader' && !r.master ? 'Leader (not master yet)' : r.role;
  return el('span', { class: r.role === 'Leader' ? 'good' : null }, role);
}

// brokerTable lists one cluster's brokers, grouped by broker name; the Raft columns appear when some broker
// reports Raft status.
function brokerTable(brokers, raft) {
  const cols = [
    { title: 'Broker', cell: (b) => b.brokerName },
    { title: 'ID', cell: (b) => String(b.brokerId), num: true },
    { title: 'Role', cell: (b) => roleText(b) },
    { title: 'Address', cell: (b) => link(b.addr, ['broker'], { addr: b.addr }, { class: 'broker-config-link' }) },
    { title: 'Version', cell: (b) => b.version || '-' },
    { title: 'In TPS', cell: (b) => fmtRate(b.inTps), num: true },
    { title: 'Out TPS', cell: (b) => fmtRate(b.outTps), num: true },
    { title: 'Disk used', cell: (b) => diskCell(b.diskRatio), num: true },
  ];
  if (raft) {
    cols.push(
      { title: 'Raft group', cell: (b) => (b.raft ? b.raft.group : '-') },
      { title: 'Node', cell: (b) => (b.raft ? b.raft.selfId : '-') },
      { title: 'Raft role', cell: (b) => (b.raft ? raftRole(b.raft) : '-') },
      { title: 'Term', cell: (b) => (b.raft ? String(b.raft.term) : '-'), num: true },
      { title: 'Leader', cell: (b) => (b.raft ? (b.raft.leaderId ? el('span', { title: `Raft address ${b.raft.leader}` }, b.raft.leaderId) : 'none') : '-') },
      { title: 'Commit / applied', cell: (b) => (b.raft ? `${b.raft.commitIndex} / ${b.raft.appliedIndex}` : '-'), num: true });
  }
  cols.push({ title: 'Status', cell: (b) => (b.error ? el('span', { class: 'bad', title: b.error }, 'unreachable') : el('span', { class: 'good' }, 'up')) });
  return table(cols, brokers, { rowAttrs: (b) => ({ class: b.error ? 'down' : null, dataset: { addr: b.addr } }) });
}

function diskCell(ratio) {
  const pct = Math.min(100, Math.max(0, Number(ratio || 0) * 100));
  return el('span', { class: 'disk' }, el('meter', { min: 0, max: 100, low: 75, high: 90, optimum: 0, value: pct }), ' ', fmtPct(ratio));
}

export function render(main, params, ctx) {
  const summary = el('p', { id: 'cluster-summary', class: 'muted' }, 'Loading…');
  const tables = el('div', { id: 'cluster-tables' });
  const charts = el('div', { class: 'charts', id: 'tps-charts' });
  const topicTPS = el('div', { id: 'topic-tps' }, 'Loading…');
  replace(main, el('h1', null, 'Cluster'), summary, tables, el('h2', null, 'Throughput'), charts,
    el('h2', null, 'Topics by throughput (last minute)'), topicTPS);
  // The console asks the cluster for the topic table at most every five sample intervals.
  const refreshTopics = async () => {
    try {
      const t = await api('GET', '/api/tps/topics');
      replace(topicTPS, table([
        { title: 'Topic', cell: (x) => link(x.topic, ['topic', x.topic]) },
        { title: 'In TPS', cell: (x) => fmtRate(x.inTps), num: true },
        { title: 'Out TPS', cell: (x) => fmtRate(x.outTps), num: true },
      ], t.topics, { id: 'topic-tps-table', empty: 'No topic', rowAttrs: (x) => ({ dataset: { topic: x.topic, in: String(x.inTps), out: String(x.outTps) } }) }));
    } catch (err) {
      replace(topicTPS, errorNotice(err));
    }
  };

  async function refresh() {
    let c;
    let h;
    try {
      [c, h] = await Promise.all([api('GET', '/api/cluster'), api('GET', '/api/history')]);
    } catch (err) {
      replace(tables, errorNotice(err));
      return;
    }
    const clusters = {};
    for (const b of c.brokers) (clusters[b.cluster] = clusters[b.cluster] || []).push(b);
    const down = c.brokers.filter((b) => b.error).length;
    replace(summary,
      `${c.brokers.length} broker${c.brokers.length === 1 ? '' : 's'} in ${c.clusters.length} cluster${c.clusters.length === 1 ? '' : 's'}`,
      down ? el('strong', { class: 'bad' }, ` · ${down} unreachable`) : null,
      ` · ACL ${c.acl ? 'on' : 'off'}`,
      c.raft ? ' · Raft mode' : '');
    replace(tables,
      c.brokers.length === 0 ? notice('info', 'The name servers know no broker.') : null,
      Object.keys(clusters).sort().map((name) => [el('h2', null, name), brokerTable(clusters[name], c.raft)]));
    const ins = h.tps.map((s) => ({ name: brokerLabel(s), points: s.points.map((p) => [p.t, p.in]) }));
    const outs = h.tps.map((s) => ({ name: brokerLabel(s), points: s.points.map((p) => [p.t, p.out]) }));
    const topics = h.topics.map((s) => ({ name: s.topic, points: s.points.map((p) => [p.t, p.in]) }));
    replace(charts,
      lineChart(ins, h.now, h.windowMs, { id: 'tps-in', title: 'Messages in per second (stored)', unit: 'msg/s' }),
      lineChart(outs, h.now, h.windowMs, { id: 'tps-out', title: 'Messages out per second (to consumers)', unit: 'msg/s' }),
      lineChart(topics, h.now, h.windowMs, { id: 'tps-topics', title: 'Messages in per second, busiest topics (one-minute rate)', unit: 'msg/s' }));
  }
  const refreshAll = () => Promise.all([refresh(), refreshTopics()]);
  refreshAll();
  return { refresh: refreshAll };
}

// renderBroker is one broker's config (GET_BROKER_CONFIG), key by key.
export function renderBroker(main, params, ctx) {
  const addr = params.get('addr') || '';
  const search = el('input', { type: 'search', id: 'config-search', placeholder: 'Search keys', autocomplete: 'off' });
  const body = el('div', null, 'Loading…');
  replace(main, el('h1', null, 'Broker ', el('code', { id: 'broker-addr' }, addr)), el('div', { class: 'toolbar' }, search), body);
  api('GET', apiPath(['brokers', addr, 'config'])).then((r) => {
    const keys = Object.keys(r.config).sort();
    const draw = () => {
      const q = search.value.trim().toLowerCase();
      const rows = keys.filter((k) => k.toLowerCase().includes(q) || r.config[k].toLowerCase().includes(q));
      replace(body, el('p', { class: 'muted' }, `${rows.length} of ${keys.length} keys`),
        table([{ title: 'Key', cell: (k) => k }, { title: 'Value', cell: (k) => r.config[k] }], rows,
          { id: 'broker-config-table', empty: 'No key matches', rowAttrs: (k) => ({ dataset: { key: k } }) }));
    };
    search.addEventListener('input', draw);
    draw();
  }, (err) => replace(body, errorNotice(err)));
}
