// The console's single page: the router (location.hash), the header with its admin account, and the
// refresh timer of the pages whose figures update by themselves.

import { el, api, replace, account, notice, session, field, errorNotice } from './dom.js';
import * as cluster from './page_cluster.js';
import * as topics from './page_topics.js';
import * as groups from './page_groups.js';
import * as messages from './page_messages.js';
import * as dlq from './page_dlq.js';
import * as subgroups from './page_subgroups.js';
import * as aclPage from './page_acl.js';

// ROUTES maps the first part of the hash to a page; a second part is the page's "name" (or "id").
const ROUTES = {
  cluster: { nav: 'cluster', render: cluster.render },
  broker: { nav: 'cluster', render: cluster.renderBroker },
  topics: { nav: 'topics', render: topics.renderList },
  topic: { nav: 'topics', render: topics.renderTopic, arg: 'name' },
  groups: { nav: 'groups', render: groups.renderList },
  group: { nav: 'groups', render: groups.renderGroup, arg: 'name' },
  client: { nav: 'groups', render: groups.renderClient },
  subgroups: { nav: 'subgroups', render: subgroups.render },
  dlq: { nav: 'dlq', render: dlq.render },
  acl: { nav: 'acl', render: aclPage.render },
  messages: { nav: 'messages', render: messages.renderSearch },
  message: { nav: 'messages', render: messages.renderMessage, arg: 'id' },
  producers: { nav: 'producers', render: messages.renderProducers },
};

const main = document.getElementById('page');
let config = { sampleIntervalMs: 5000, historyMs: 600000 };
let timer = null;
let loggedOut = false; // the console requires a login and this page has no session: only the login form shows

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
  if (loggedOut) {
    showLogin();
    return;
  }
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

// The login form, shown instead of every page while the console requires a login and this page has none.
function showLogin() {
  if (timer) clearInterval(timer);
  timer = null;
  loggedOut = true;
  session.set({ login: true });
  for (const a of document.querySelectorAll('header nav a')) a.classList.remove('active');
  const ak = el('input', { name: 'accessKey', autocomplete: 'username', required: true });
  const sk = el('input', { name: 'secretKey', type: 'password', autocomplete: 'current-password', required: true });
  const out = el('div', { class: 'result' });
  const form = el('form', { class: 'card', id: 'login-form' },
    el('h2', null, 'Log in'),
    el('p', null, 'The console requires a login: an account (accessKey and secretKey) of its ACL file.'),
    el('div', { class: 'row' }, field('Access key', ak), field('Secret key', sk)),
    el('button', { type: 'submit' }, 'Log in'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(out, notice('info', 'Logging in…'));
    try {
      session.set(await api('POST', '/api/login', { accessKey: ak.value.trim(), secretKey: sk.value }));
      loggedOut = false;
      await loadConfig();
      show();
    } catch (err) {
      sk.value = '';
      replace(out, errorNotice(err));
    }
  });
  replace(main, el('h1', null, 'RocketRaft console'), form);
  ak.focus();
}

// The header's session part: who is logged in, and the logout button.
function setupSession() {
  const user = document.getElementById('session-user');
  const button = document.getElementById('logout-button');
  const label = () => {
    const on = session.login && !!session.accessKey;
    replace(user, on ? `Logged in as ${session.accessKey}` : '');
    button.hidden = !on;
  };
  label();
  window.addEventListener('console-session', label);
  window.addEventListener('console-need-login', showLogin);
  button.addEventListener('click', async () => {
    try {
      await api('POST', '/api/logout');
    } finally {
      showLogin();
    }
  });
}

async function loadConfig() {
  try {
    config = await api('GET', '/api/config');
  } catch (e) {
    // keep the defaults: the pages say what fails
  }
  document.getElementById('refresh-note').textContent = `Figures refresh every ${config.sampleIntervalMs / 1000} s.`;
}

async function start() {
  setupAccount();
  setupSession();
  try {
    session.set(await api('GET', '/api/session'));
  } catch (e) {
    loggedOut = e.needLogin; // anything else: the pages say what fails
  }
  if (!loggedOut) await loadConfig();
  // Listening only now: a hash changed while the page started is rendered once, by the show below.
  window.addEventListener('hashchange', show);
  show();
}

start();
