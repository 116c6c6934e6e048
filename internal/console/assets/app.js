// The console's single page: the router (location.hash), the header with its admin account, and the
// refresh timer of the pages whose figures update by themselves.

import { el, api, replace, account, notice } from './dom.js';
import * as cluster from './page_cluster.js';
import * as topics from './page_topics.js';
import * as groups from './page_groups.js';
import * as messages from './page_messages.js';

// ROUTES maps the first part of the hash to a page; a second part is the page's "name" (or "id").
const ROUTES = {
  cluster: { nav: 'cluster', render: cluster.render },
  topics: { nav: 'topics', render: topics.renderList },
  topic: { nav: 'topics', render: topics.renderTopic, arg: 'name' },
  groups: { nav: 'groups', render: groups.renderList },
  group: { nav: 'groups', render: groups.renderGroup, arg: 'name' },
  messages: { nav: 'messages', render: messages.renderSearch },
  message: { nav: 'messages', render: messages.renderMessage, arg: 'id' },
  producers: { nav: 'producers', render: messages.renderProducers },
};

const main = document.getElementById('page');
let config = { sampleIntervalMs: 5000, historyMs: 600000 };
let timer = null;

function parseHash() {
  const h = location.hash.replace(/^#\/?/, '');
  const [path, query] = h.split('?', 2);
  const parts = path.split('/').filter((p) => p !== '').map(decodeURIComponent);
  return { parts, params: new URLSearchParams(query || '') };
}

function go(hash) {
  if (location.hash === hash) show();
  else location.hash = hash;
}

function show() {
  if (timer) clearInterval(timer);
  timer = null;
  const { parts, params } = parseHash();
  const r = ROUTES[parts[0] || 'cluster'];
  for (const a of document.querySelectorAll('header nav a')) a.classList.toggle('active', !!r && a.dataset.nav === r.nav);
  if (!r || (r.arg && !parts[1])) {
    replace(main, el('h1', null, 'Not found'), notice('error', 'No page at ', location.hash));
    return;
  }
  if (r.arg) params.set(r.arg, parts.slice(1).join('/'));
  const page = r.render(main, params, { go, config }) || {};
  if (page.refresh) {
    let busy = false;
    timer = setInterval(async () => {
      if (busy || document.hidden) return;
      busy = true;
      try {
        await page.refresh();
      } finally {
        busy = false;
      }
    }, config.sampleIntervalMs);
  }
}

// The admin account: kept for this tab only, sent with changes (topics, offsets) when ACL is on.
function setupAccount() {
  const button = document.getElementById('account-button');
  const dialog = document.getElementById('account-dialog');
  const ak = document.getElementById('account-access-key');
  const sk = document.getElementById('account-secret-key');
  const label = () => {
    const a = account.get();
    replace(button, a ? `Admin: ${a.accessKey}` : 'Admin account');
    button.classList.toggle('set', !!a);
  };
  label();
  window.addEventListener('console-account', label);
  window.addEventListener('console-need-account', () => button.classList.add('wanted'));
  button.addEventListener('click', () => {
    const a = account.get();
    ak.value = a ? a.accessKey : '';
    sk.value = '';
    dialog.showModal();
  });
  document.getElementById('account-form').addEventListener('submit', (ev) => {
    if (ev.submitter && ev.submitter.value === 'save' && ak.value.trim() && sk.value) {
      account.set(ak.value.trim(), sk.value);
      button.classList.remove('wanted');
    } else if (ev.submitter && ev.submitter.value === 'clear') {
      account.clear();
    }
  });
}

async function start() {
  setupAccount();
  try {
    config = await api('GET', '/api/config');
  } catch (e) {
    // keep the defaults: the pages say what fails
  }
  document.getElementById('refresh-note').textContent = `Figures refresh every ${config.sampleIntervalMs / 1000} s.`;
  window.addEventListener('hashchange', show);
  show();
}

start();
