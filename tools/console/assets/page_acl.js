// The ACL accounts page: each master's plain_acl.yml (accounts and global white addresses) read and edited
// over the wire (GET_BROKER_CLUSTER_ACL_CONFIG, UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG,
// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG). The brokers answer and take these from admin accounts only: reads are
// signed with the admin account too. Secret keys are never shown.

import { el, api, apiPath, replace, table, field, notice, errorNotice } from './dom.js';

const PERMS = ['', 'DENY', 'PUB', 'SUB', 'PUB|SUB'];

const list = (s) => s.split(/[\s,]+/).map((x) => x.trim()).filter((x) => x !== '');

function permSelect(name, value) {
  return el('select', { name }, PERMS.map((p) => el('option', { value: p, selected: (value || '') === p }, p || '(keep the file\'s)')));
}

// accountForm creates an account, or replaces one (existing; its access key is then fixed and an empty
// secret key keeps the old one).
function accountForm(clusters, existing, onDone) {
  const a = existing ? existing.account : {};
  const ak = el('input', { name: 'accessKey', required: true, value: a.accessKey || '', readonly: !!existing, autocomplete: 'off' });
  const sk = el('input', { name: 'secretKey', type: 'password', required: !existing, autocomplete: 'new-password',
    placeholder: existing ? 'unchanged' : '' });
  const cluster = el('select', { name: 'cluster' }, clusters.map((c) => el('option', { value: c, selected: existing && existing.cluster === c }, c)));
  const admin = el('input', { name: 'admin', type: 'checkbox', checked: !!a.admin });
  const white = el('input', { name: 'whiteRemoteAddress', value: a.whiteRemoteAddress || '', autocomplete: 'off' });
  const topicPerm = permSelect('defaultTopicPerm', a.defaultTopicPerm);
  const groupPerm = permSelect('defaultGroupPerm', a.defaultGroupPerm);
  const topics = el('input', { name: 'topicPerms', value: (a.topicPerms || []).join(', '), size: 40, autocomplete: 'off' });
  const groups = el('input', { name: 'groupPerms', value: (a.groupPerms || []).join(', '), size: 40, autocomplete: 'off' });
  const out = el('div', { class: 'result' });
  const form = el('form', { class: 'card', id: existing ? 'update-account-form' : 'create-account-form' },
    el('h2', null, existing ? `Update ${a.accessKey}` : 'Create account'),
    el('div', { class: 'row' }, field('Access key', ak), field('Secret key', sk), field('Cluster', cluster), field('Admin', admin),
      field('White address', white, 'e.g. 192.168.1.*')),
    el('div', { class: 'row' }, field('Default topic perm', topicPerm), field('Default group perm', groupPerm),
      field('Topic perms', topics, 'topicA=DENY, topicB=PUB|SUB'), field('Group perms', groups, 'groupA=SUB')),
    el('button', { type: 'submit' }, existing ? 'Update' : 'Create'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    replace(out, notice('info', 'Working…'));
    const account = { accessKey: ak.value.trim(), secretKey: sk.value, admin: admin.checked, whiteRemoteAddress: white.value.trim(),
      defaultTopicPerm: topicPerm.value, defaultGroupPerm: groupPerm.value, topicPerms: list(topics.value), groupPerms: list(groups.value) };
    try {
      const r = await api('POST', '/api/acl/accounts', { cluster: cluster.value, account });
      sk.value = '';
      replace(out, notice('ok', `Account ${account.accessKey} ${existing ? 'updated' : 'created'} on ${r.brokers.join(', ')}.`));
      onDone();
    } catch (err) {
      replace(out, errorNotice(err));
    }
  });
  return form;
}

// whiteForm sets a cluster's global white addresses.
function whiteForm(clusters, current, onDone) {
  const cluster = el('select', { name: 'cluster' }, clusters.map((c) => el('option', { value: c }, c)));
  const addrs = el('input', { name: 'addrs', value: (current || []).join(', '), size: 50, autocomplete: 'off' });
  const out = el('div', { class: 'result' });
  const form = el('form', { class: 'card', id: 'white-addrs-form' },
    el('h2', null, 'Global white addresses'),
    el('p', { class: 'muted' }, 'Clients from these addresses pass without a signature. Empty clears them.'),
    el('div', { class: 'row' }, field('Cluster', cluster), field('Addresses', addrs, 'comma separated: 10.10.103.*, 192.168.0.{100,101}')),
    el('button', { type: 'submit' }, 'Save'), out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    try {
      const r = await api('POST', '/api/acl/whiteaddrs', { cluster: cluster.value, addrs: list(addrs.value) });
      replace(out, notice('ok', `Global white addresses saved on ${r.brokers.join(', ')}.`));
      onDone();
    } catch (err) {
      replace(out, errorNotice(err));
    }
  });
  return form;
}

export function render(main, params, ctx) {
  const body = el('div', { id: 'acl-list' }, 'Loading…');
  const editSlot = el('div', { id: 'acl-edit' });
  const forms = el('div');
  const out = el('div', { class: 'result', id: 'acl-delete-result' });
  replace(main, el('h1', null, 'ACL accounts'),
    el('p', { class: 'muted' }, 'The accounts of each master\'s ACL file. The brokers show and change them for admin accounts only: set one with "Admin account" at the top right.'),
    body, out, editSlot, forms);
  let clusters = [];
  const remove = async (b, a) => {
    if (!window.confirm(`Delete account ${a.accessKey} from cluster ${b.cluster}?`)) return;
    try {
      const r = await api('DELETE', apiPath(['acl', 'accounts', a.accessKey], { cluster: b.cluster }));
      replace(out, notice('ok', `Account ${a.accessKey} deleted from ${r.brokers.join(', ')}.`));
      replace(editSlot);
      load();
    } catch (err) {
      replace(out, errorNotice(err));
    }
  };
  async function load() {
    let acl;
    try {
      const [a, c] = await Promise.all([api('GET', '/api/acl', undefined, { signed: true }), api('GET', '/api/cluster')]);
      acl = a;
      clusters = c.clusters;
    } catch (err) {
      replace(body, errorNotice(err));
      return;
    }
    replace(body, acl.brokers.map((b) => [
      el('h2', null, `${b.cluster} / ${b.brokerName} `, el('small', { class: 'muted' }, b.addr)),
      b.error ? notice('error', b.error) : [
        el('p', { class: 'muted' }, 'Global white addresses: ', el('span', { class: 'white-addrs', dataset: { broker: b.brokerName } },
          b.globalWhiteAddrs.length ? b.globalWhiteAddrs.join(', ') : 'none')),
        table([
          { title: 'Access key', cell: (a) => a.accessKey },
          { title: 'Admin', cell: (a) => (a.admin ? 'yes' : 'no') },
          { title: 'White address', cell: (a) => a.whiteRemoteAddress || '-' },
          { title: 'Default topic', cell: (a) => a.defaultTopicPerm || '-' },
          { title: 'Default group', cell: (a) => a.defaultGroupPerm || '-' },
          { title: 'Topic perms', cell: (a) => (a.topicPerms || []).join(', ') || '-' },
          { title: 'Group perms', cell: (a) => (a.groupPerms || []).join(', ') || '-' },
          { title: '', cell: (a) => el('span', { class: 'buttons' },
            el('button', { type: 'button', class: 'secondary account-edit', onclick: () => replace(editSlot, accountForm(clusters, { cluster: b.cluster, account: a }, load)) }, 'Edit'),
            el('button', { type: 'button', class: 'danger account-delete', onclick: () => remove(b, a) }, 'Delete')) },
        ], b.accounts, { class: 'acl-table', empty: 'No account', rowAttrs: (a) => ({ class: 'account', dataset: { ak: a.accessKey, broker: b.brokerName } }) })],
    ]));
    if (!forms.firstChild) {
      const first = acl.brokers.find((b) => !b.error);
      replace(forms, accountForm(clusters, null, load), whiteForm(clusters, first ? first.globalWhiteAddrs : [], load));
    }
  }
  load();
}
