package acl

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/fsnotify/fsnotify"

	"github.com/rocketraft/rocketraft/protocol"
	"github.com/rocketraft/rocketraft/remoting"
)

// DeniedError is a refused request. Its Error is the remark the client gets with NO_PERMISSION:
// "No permission: " and the reason, which names the account and what it lacks, never a secret.
type DeniedError struct {
	Account string               // the request's AccessKey; "" when it had none
	Code    remoting.RequestCode // the request's code
	Reason  string
}

func (e *DeniedError) Error() string { return "No permission: " + e.Reason }

// Status tells how loading the ACL file went.
type Status struct {
	Path      string // the file
	Accounts  int    // accounts in the rules in force
	Loads     int64  // files loaded into force, the first included
	Failures  int64  // changed files refused (the rules before them stayed in force)
	LastError string // why the last refused file was refused; "" after a good load
}

// Validator checks requests against the rules of an ACL file and keeps them current as the file changes.
// Check and Intercept may be called concurrently with each other and with a reload.
type Validator struct {
	path   string // absolute
	logger *slog.Logger
	rules  atomic.Pointer[Rules]

	mu struct { // serializes loads and edits (edit.go)
		sync.Mutex
		digest  [sha256.Size]byte // of the file content in force
		status  Status
		version protocol.DataVersion // of the rules in force (Version)
	}

	watcher   *fsnotify.Watcher
	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// New loads the ACL file at path. A file that is missing or does not parse is an error (naming the path and,
// for a bad entry, the entry); a broker with aclEnable on does not start without its rules. Start watches the
// file for changes. A nil logger discards.
func New(path string, logger *slog.Logger) (*Validator, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("acl: %s: %w", path, err)
	}
	v := &Validator{path: abs, logger: logger, stop: make(chan struct{})}
	v.mu.status.Path = abs
	if _, err := v.load(); err != nil {
		return nil, err
	}
	return v, nil
}

// load reads the file and puts its rules in force unless it is unchanged; changed reports which.
func (v *Validator) load() (changed bool, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	data, err := os.ReadFile(v.path)
	if err != nil {
		return false, fmt.Errorf("acl: read %s: %w", v.path, err)
	}
	digest := sha256.Sum256(data)
	if v.rules.Load() != nil && digest == v.mu.digest {
		return false, nil
	}
	r, err := ParseRules(data)
	if err != nil {
		return false, fmt.Errorf("%w (file %s)", err, v.path)
	}
	v.installLocked(data, r)
	for _, k := range r.UnknownKeys {
		v.logger.Warn("acl: unknown key in the ACL file, ignored", "file", v.path, "key", k)
	}
	return true, nil
}

// installLocked puts r, read from data, in force. v.mu must be held.
func (v *Validator) installLocked(data []byte, r *Rules) {
	v.rules.Store(r)
	v.mu.digest = sha256.Sum256(data)
	v.mu.status.Accounts = r.Accounts()
	v.mu.status.Loads++
	v.mu.status.LastError = ""
	v.mu.version = fileVersion(r.src.DataVersion)
	if v.mu.version.Timestamp == 0 {
		if st, err := os.Stat(v.path); err == nil {
			v.mu.version.Timestamp = st.ModTime().UnixMilli()
		}
	}
}

// Reload reads the file again now (the watcher does this by itself after Start). A file that cannot be read
// or does not parse leaves the rules in force and is logged and counted in Status.
func (v *Validator) Reload() error {
	changed, err := v.load()
	if err != nil {
		// Logged before it is counted: whoever sees the count in Status finds the line in the log.
		v.logger.Error("acl: the changed ACL file is refused; the rules loaded before stay in force", "err", err)
		v.mu.Lock()
		v.mu.status.Failures++
		v.mu.status.LastError = err.Error()
		v.mu.Unlock()
		return err
	}
	if changed {
		v.logger.Info("acl: ACL file reloaded", "file", v.path, "accounts", v.Status().Accounts)
	}
	return nil
}

// Status returns how loading went.
func (v *Validator) Status() Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.mu.status
}

// Check verifies one request from remote (ip:port) in RocketMQ's order: a global white address passes
// everything; then the request needs an AccessKey of a known account; the account's white address passes the
// rest; then the signature must match, admin request codes need an admin account, and each topic and group
// the request touches needs the permission the code asks for (the account's entry for it, else its default;
// an admin account without any topicPerms or groupPerms has every permission). It returns nil or a
// *DeniedError.
func (v *Validator) Check(remote string, req *remoting.Command) error {
	r := v.rules.Load()
	ip := remoteIP(remote)
	for _, p := range r.globalWhite {
		if p.match(ip) {
			return nil
		}
	}
	code := remoting.RequestCode(req.Code)
	ak := req.ExtFields[remoting.ExtAccessKey]
	deny := func(format string, args ...any) error {
		return &DeniedError{Account: ak, Code: code, Reason: fmt.Sprintf(format, args...)}
	}
	if ak == "" {
		return deny("the request (%s) carries no AccessKey; ACL is enabled (aclEnable=true)", code)
	}
	a := r.accounts[ak]
	if a == nil {
		return deny("account [%s] is not in the ACL file", ak)
	}
	if a.white.match(ip) {
		return nil
	}
	_, err := remoting.VerifySignature(req, func(string) (string, bool) { return a.secretKey, true })
	switch {
	case errors.Is(err, remoting.ErrNoCredentials):
		return deny("the request (%s) of account [%s] carries no Signature", code, ak)
	case err != nil:
		return deny("signature check failed for account [%s]", ak)
	}
	needs, err := needsOf(req)
	if err != nil {
		return deny("account [%s]: %v", ak, err)
	}
	if onlyTracePub(needs) {
		return nil
	}
	if adminCodes[code] && !a.admin {
		return deny("account [%s] is not admin; %s needs an admin account", ak, code)
	}
	if a.admin && len(a.topics) == 0 && len(a.groups) == 0 {
		return nil
	}
	return a.grants(needs, deny)
}

// grants returns nil when the account holds every one of needs (its entry for the topic or group, else its
// default), or deny's error for the first it lacks.
func (a *account) grants(needs []need, deny func(format string, args ...any) error) error {
	for _, n := range needs {
		table, owned := a.topics, a.defaultTopic
		if n.group {
			table, owned = a.groups, a.defaultGroup
		}
		if p, ok := table[n.name]; ok {
			owned = p
		}
		if !owned.Allows(n.perm) {
			return deny("account [%s] has no %s on %s", a.accessKey, n.perm, n)
		}
	}
	return nil
}

// Intercept is Check as a remoting.Interceptor: a refused request is answered NO_PERMISSION with the reason as
// its remark, and logged (remote, code, account, reason; never a secret).
func (v *Validator) Intercept(conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	err := v.Check(conn.RemoteAddr(), req)
	if err == nil {
		return nil
	}
	var d *DeniedError
	if errors.As(err, &d) {
		v.logger.Info("acl: request refused", "remote", conn.RemoteAddr(), "code", d.Code, "account", d.Account,
			"reason", d.Reason)
	}
	return remoting.NewResponse(remoting.NoPermission, err.Error())
}

// Start watches the file's folder and reloads the file whenever it, or a Kubernetes-style "..data" link next
// to it, changes. Write a new file to a temporary name and rename it over the old one: a file rewritten in
// place may be read half written (it is then refused, and the complete one loaded on its next write event).
func (v *Validator) Start() error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("acl: watch %s: %w", v.path, err)
	}
	if err := w.Add(filepath.Dir(v.path)); err != nil {
		_ = w.Close()
		return fmt.Errorf("acl: watch %s: %w", filepath.Dir(v.path), err)
	}
	v.watcher = w
	v.wg.Add(1)
	go v.watchLoop()
	v.logger.Info("acl: enabled", "file", v.path, "accounts", v.Status().Accounts)
	return nil
}

func (v *Validator) watchLoop() {
	defer v.wg.Done()
	for {
		select {
		case <-v.stop:
			return
		case ev, ok := <-v.watcher.Events:
			if !ok {
				return
			}
			if ev.Name != v.path && filepath.Base(ev.Name) != "..data" {
				continue
			}
			if _, err := os.Stat(v.path); err != nil {
				v.logger.Info("acl: the ACL file is gone for now; the rules loaded before stay in force", "file", v.path)
				continue
			}
			_ = v.Reload() // logged and counted
		case err, ok := <-v.watcher.Errors:
			if !ok {
				return
			}
			v.logger.Warn("acl: file watch error", "file", v.path, "err", err)
		}
	}
}

// Close stops the watcher and waits for it. It may be called more than once, also without Start.
func (v *Validator) Close() error {
	var err error
	v.closeOnce.Do(func() {
		close(v.stop)
		if v.watcher != nil {
			err = v.watcher.Close()
		}
		v.wg.Wait()
	})
	return err
}
