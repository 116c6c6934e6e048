// Helpers shared by the pages: building DOM nodes (text always goes in as text nodes, never as HTML), calling
// the console's JSON API, formatting numbers and times, and the admin account kept for this browser tab.

// el builds an element. attrs: class, id, text attributes, `on<event>` handlers, `dataset` and `value`/
// `checked`/`selected` properties. Children: nodes, strings (as text), arrays; null, undefined and false are
// skipped.
export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

const SVG = 'http://www.w3.org/2000/svg';

// svg builds an SVG element, as el.
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

function build(node, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      node.addEventListener(k.slice(2), v);
    } else if (k === 'dataset') {
      Object.assign(node.dataset, v);
    } else if (k === 'value' || k === 'checked' || k === 'selected') {
      node[k] = v;
    } else {
      node.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// replace empties node and appends children.
export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

// link is an <a> to a console route: parts are encoded one by one, query values too.
export function route(parts, query) {
  let h = '#/' + parts.map(encodeURIComponent).join('/');
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  return qs ? h + '?' + qs : h;
}

export function link(text, parts, query, attrs) {
  return el('a', Object.assign({ href: route(parts, query) }, attrs || {}), text);
}

// ApiError is an answer other than 200.
export class ApiError extends Error {
  constructor(status, message, needAccount, needLogin) {
    super(message);
    this.status = status;
    this.needAccount = !!needAccount;
    this.needLogin = !!needLogin;
  }
}

// session is the login of this page, when the console requires one: the account and the CSRF token every
// change carries (kept in memory only; the session cookie itself is HttpOnly, out of reach of scripts).
export const session = {
  login: false,
  accessKey: '',
  csrfToken: '',
  set(body) {
    this.login = !!body.login;
    this.accessKey = body.accessKey || '';
    this.csrfToken = body.csrfToken || '';
    window.dispatchEvent(new Event('console-session'));
  },
};

const ACCOUNT_KEY = 'rocketraft.console.account';

// account is the admin account of this tab (sessionStorage: gone with the tab).
export const account = {
  get() {
    try {
      const a = JSON.parse(sessionStorage.getItem(ACCOUNT_KEY) || 'null');
      return a && a.accessKey ? a : null;
    } catch (e) {
      return null;
    }
  },
  set(accessKey, secretKey) {
    sessionStorage.setItem(ACCOUNT_KEY, JSON.stringify({ accessKey, secretKey }));
    window.dispatchEvent(new Event('console-account'));
  },
  clear() {
    sessionStorage.removeItem(ACCOUNT_KEY);
    window.dispatchEvent(new Event('console-account'));
  },
};

// api calls the console's JSON API. A change (method other than GET), or a read with opts.signed (one the
// brokers answer admin accounts only), carries the request header and the admin account when one is set.
export async function api(method, path, body, opts) {
  const headers = { Accept: 'application/json' };
  if (method !== 'GET' || (opts && opts.signed)) {
    headers['X-Console-Request'] = '1';
    if (session.csrfToken) headers['X-CSRF-Token'] = session.csrfToken;
    const a = account.get();
    if (a) {
      headers['X-Console-Access-Key'] = a.accessKey;
      headers['X-Console-Secret-Key'] = a.secretKey;
    }
  }
  const init = { method, headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  let data = null;
  try {
    data = await resp.json();
  } catch (e) {
    data = { error: resp.statusText };
  }
  if (!resp.ok) {
    const err = new ApiError(resp.status, (data && data.error) || resp.statusText, data && data.needAccount, data && data.needLogin);
    if (err.needLogin && path !== '/api/login' && path !== '/api/session') window.dispatchEvent(new Event('console-need-login'));
    throw err;
  }
  return data;
}

// apiPath builds /api/... with encoded path parts and query values.
export function apiPath(parts, query) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const qs = q.toString();
  return '/api/' + parts.map(encodeURIComponent).join('/') + (qs ? '?' + qs : '');
}

const pad = (n, w) => String(n).padStart(w || 2, '0');

// fmtTime is local time with milliseconds; 0 or less is "-".
export function fmtTime(ms) {
  if (!ms || ms <= 0) return '-';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// fmtClock is HH:MM:SS for axes.
export function fmtClock(ms) {
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// localInput is the value of a datetime-local input for ms; parseLocal reads one back (NaN when empty).
export function localInput(ms) {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
export function parseLocal(v) {
  return v ? new Date(v).getTime() : NaN;
}

export function fmtInt(n) {
  return Number(n || 0).toLocaleString('en-US');
}

export function fmtRate(x) {
  const v = Number(x || 0);
  return v >= 100 ? v.toFixed(0) : v.toFixed(2);
}

export function fmtPct(ratio) {
  return (Number(ratio || 0) * 100).toFixed(1) + ' %';
}

// b64bytes decodes the base64 of a JSON []byte.
export function b64bytes(s) {
  const bin = atob(s || '');
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

// utf8 is the text of bytes, or null when they are not UTF-8.
export function utf8(bytes) {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (e) {
    return null;
  }
}

// hexDump is 16 bytes a line: offset, hex, printable ASCII.
export function hexDump(bytes) {
  const lines = [];
  for (let off = 0; off < bytes.length; off += 16) {
    const row = bytes.subarray(off, off + 16);
    const hex = Array.from(row, (b) => pad(b.toString(16), 2)).join(' ');
    const ascii = Array.from(row, (b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.')).join('');
    lines.push(`${pad(off.toString(16), 8)}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join('\n');
}

// preview is a short one-line view of bytes: text when UTF-8, else hex.
export function preview(bytes, size) {
  const t = utf8(bytes);
  const s = t !== null ? t.replace(/\s+/g, ' ') : Array.from(bytes, (b) => pad(b.toString(16), 2)).join(' ');
  return size > bytes.length ? s + ' …' : s;
}

// table builds a <table>. cols: [{title, cell: row => node|string, num: bool}]; rows: array; opts.id,
// opts.empty (text when there are no rows), opts.foot (array of cells for a total row), opts.rowAttrs.
export function table(cols, rows, opts) {
  opts = opts || {};
  const head = el('thead', null, el('tr', null, cols.map((c) => el('th', { class: c.num ? 'num' : null }, c.title))));
  const body = el('tbody', null,
    rows.length === 0
      ? el('tr', null, el('td', { colspan: cols.length, class: 'empty' }, opts.empty || 'Nothing to show'))
      : rows.map((r) => el('tr', opts.rowAttrs ? opts.rowAttrs(r) : null,
        cols.map((c) => el('td', { class: c.num ? 'num' : null }, c.cell(r))))));
  const foot = opts.foot
    ? el('tfoot', null, el('tr', null, opts.foot.map((v, i) => el('td', { class: cols[i] && cols[i].num ? 'num' : null }, v))))
    : null;
  return el('table', { id: opts.id, class: 'data' }, head, body, foot);
}

// kv is a two-column table of [label, value] pairs.
export function kv(pairs, id) {
  return el('table', { class: 'kv', id }, el('tbody', null, pairs.map(([k, v]) => el('tr', null, el('th', null, k), el('td', null, v)))));
}

// notice is a message box: kind is 'error', 'ok' or 'info'.
export function notice(kind, ...text) {
  return el('div', { class: 'notice ' + kind, role: kind === 'error' ? 'alert' : 'status' }, text);
}

// field is a labelled form control.
export function field(label, control, hint) {
  return el('label', { class: 'field' }, el('span', null, label), control, hint ? el('small', null, hint) : null);
}

// errorNotice shows an API failure; a refusal for want of an admin account says where to give one.
export function errorNotice(err) {
  if (err instanceof ApiError && err.needAccount) {
    window.dispatchEvent(new Event('console-need-account'));
    return notice('error', err.message, ' — set an admin account with the "Admin account" button at the top right.');
  }
  if (err instanceof ApiError) return notice('error', `${err.status}: ${err.message}`);
  return notice('error', String(err && err.message ? err.message : err));
}
