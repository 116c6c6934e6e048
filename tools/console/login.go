package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rocketraft/rocketraft/acl"
	"github.com/rocketraft/rocketraft/remoting"
)

// Sessions: a login makes a random 256-bit session id, kept in memory and sent back as a cookie that is
// HttpOnly (no script reads it), SameSite=Strict (no other site's page makes the browser send it) and, when the
// console serves TLS, Secure under the __Host- prefix (never sent over plain HTTP, bound to this host). A
// session ends after sessionIdle without a request, after sessionMax in any case, at logout, and when the
// console stops.
const (
	sessionIdle = 30 * time.Minute
	sessionMax  = 12 * time.Hour
	maxSessions = 10_000 // live sessions; a login beyond is refused (503) until some expire

	// Failed logins: after loginFailures from one address within loginWindow, its logins are refused (429)
	// until the window ends, so secrets cannot be guessed at the rate of HTTP requests.
	loginFailures = 5
	loginWindow   = time.Minute

	cookiePlain  = "rrconsole_session"
	cookieSecure = "__Host-rrconsole_session"
	csrfHeader   = "X-CSRF-Token"
)

// session is one logged-in browser.
type session struct {
	account remoting.Credentials // signs the changes the person makes without another admin account
	admin   bool
	csrf    string // the synchronizer token: every change of the session must carry it in csrfHeader
	created time.Time
	seen    time.Time
}

// loginGate decides whether the console requires a login, checks logins against the ACL file and keeps the
// sessions. Safe for concurrent use.
type loginGate struct {
	required bool
	why      string         // for the start-up line: why the login is on or off
	accounts *acl.Validator // nil when no aclFile was given (then required is false)
	now      func() time.Time

	mu       sync.Mutex
	sessions map[string]*session  // by session id
	failures map[string]*failures // failed logins by remote IP
}

// failures counts an address's failed logins in the window that began at start.
type failures struct {
	n     int
	start time.Time
}

// beyondLoopback reports whether host (of --listen) may be reached from other machines: an empty host, a
// wildcard, a non-loopback address, or a name other than localhost (it may resolve anywhere).
func beyondLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// newLoginGate applies the policy: a login is required when the console listens beyond loopback, or with
// RequireLogin; it then needs AclFile. The errors name the options.
func newLoginGate(cfg Config) (*loginGate, error) {
	host, _, _ := net.SplitHostPort(cfg.Listen) // validated before
	g := &loginGate{now: time.Now, sessions: map[string]*session{}, failures: map[string]*failures{}}
	switch {
	case beyondLoopback(host):
		g.required, g.why = true, fmt.Sprintf("--listen %s reaches beyond loopback", cfg.Listen)
	case cfg.RequireLogin:
		g.required, g.why = true, "--login"
	default:
		g.why = fmt.Sprintf("--listen %s is loopback only; --login requires one there too", cfg.Listen)
	}
	if !g.required {
		return g, nil
	}
	if cfg.AclFile == "" {
		return nil, fmt.Errorf("--aclFile: the console requires a login (%s): give the plain_acl.yml whose accounts may log in (the brokers' own serves)", g.why)
	}
	v, err := acl.New(cfg.AclFile, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("--aclFile: %w", err)
	}
	g.accounts = v
	return g, nil
}

// status is the start-up line's text.
func (g *loginGate) status() string {
	if !g.required {
		return "login off (" + g.why + ")"
	}
	return fmt.Sprintf("login required (%s; accounts of %s)", g.why, g.accounts.Status().Path)
}

func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

func cookieName(r *http.Request) string {
	if r.TLS != nil {
		return cookieSecure
	}
	return cookiePlain
}

// login checks the account and opens a session; the cookie goes on w.
func (g *loginGate) login(w http.ResponseWriter, r *http.Request, accessKey, secretKey string) (*session, error) {
	now := g.now()
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	if wait := g.blocked(ip, now); wait > 0 {
		return nil, &apiError{status: http.StatusTooManyRequests, needLogin: true, msg: fmt.Sprintf(
			"login refused: %d failed logins from %s within %v; try again in %v", loginFailures, ip, loginWindow, wait.Round(time.Second))}
	}
	p, err := g.accounts.Login(accessKey, secretKey)
	if err != nil {
		g.failed(ip, now)
		return nil, &apiError{status: http.StatusUnauthorized, needLogin: true, msg: "login refused: unknown account or wrong secret key"}
	}
	g.mu.Lock()
	delete(g.failures, ip)
	g.mu.Unlock()
	s := &session{account: remoting.Credentials{AccessKey: accessKey, SecretKey: remoting.Secret(secretKey)},
		admin: p.Admin, csrf: newToken(), created: now, seen: now}
	id := newToken()
	g.mu.Lock()
	for k, old := range g.sessions {
		if g.expiredLocked(old, now) {
			delete(g.sessions, k)
		}
	}
	if len(g.sessions) >= maxSessions {
		g.mu.Unlock()
		return nil, &apiError{status: http.StatusServiceUnavailable, msg: fmt.Sprintf("too many sessions (%d); try later", maxSessions)}
	}
	g.sessions[id] = s
	g.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: id, Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: int(sessionMax / time.Second)})
	return s, nil
}

// blocked is how long ip must wait before its next login (0: it may try now).
func (g *loginGate) blocked(ip string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.failures[ip]
	if f == nil || f.n < loginFailures || now.Sub(f.start) >= loginWindow {
		return 0
	}
	return loginWindow - now.Sub(f.start)
}

// failed counts a failed login of ip.
func (g *loginGate) failed(ip string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.failures) >= maxSessions { // bounded: forget the windows that ended
		for k, f := range g.failures {
			if now.Sub(f.start) >= loginWindow {
				delete(g.failures, k)
			}
		}
	}
	f := g.failures[ip]
	if f == nil || now.Sub(f.start) >= loginWindow {
		f = &failures{start: now}
		g.failures[ip] = f
	}
	f.n++
}

// expiredLocked: g.mu must be held.
func (g *loginGate) expiredLocked(s *session, now time.Time) bool {
	return now.Sub(s.seen) > sessionIdle || now.Sub(s.created) > sessionMax
}

// session is the request's live session (its last use moved to now), or nil.
func (g *loginGate) session(r *http.Request) *session {
	c, err := r.Cookie(cookieName(r))
	if err != nil || c.Value == "" {
		return nil
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[c.Value]
	if s == nil {
		return nil
	}
	if g.expiredLocked(s, now) {
		delete(g.sessions, c.Value)
		return nil
	}
	s.seen = now
	return s
}

// logout ends the request's session and clears the cookie.
func (g *loginGate) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName(r)); err == nil {
		g.mu.Lock()
		delete(g.sessions, c.Value)
		g.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName(r), Value: "", Path: "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// close ends every session and stops watching the ACL file.
func (g *loginGate) close() error {
	g.mu.Lock()
	clear(g.sessions)
	g.mu.Unlock()
	if g.accounts != nil {
		return g.accounts.Close()
	}
	return nil
}

// changing reports whether a method changes something (everything but GET, HEAD and OPTIONS).
func changing(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// errCrossSite is the answer to a change sent from a page of another origin.
var errCrossSite = errors.New("cross-site request refused: changes come only from the console's own pages")

// sameOrigin checks a change against cross-site request forgery by what the browser says of its origin:
// Sec-Fetch-Site must be same-origin (or none: typed by the person) and Origin, when present, the console's
// own (scheme and host of the request). A client that sends neither (curl, scripts) is no browser a page
// could drive, and passes this check.
func sameOrigin(r *http.Request) error {
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("%w (Sec-Fetch-Site: %s)", errCrossSite, site)
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if !strings.EqualFold(origin, scheme+"://"+r.Host) {
		return fmt.Errorf("%w (Origin %s is not %s://%s)", errCrossSite, origin, scheme, r.Host)
	}
	return nil
}

// guard wraps the API: a change must pass sameOrigin; with a login required, every API call but the login and
// the session query needs a live session, and every change its CSRF token.
func (s *Server) guard(next http.Handler) http.Handler {
	g := s.login
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if changing(r.Method) {
			if err := sameOrigin(r); err != nil {
				s.log.Warn("console: cross-site change refused", "method", r.Method, "path", r.URL.Path,
					"remote", r.RemoteAddr, "err", err)
				writeJSON(w, http.StatusForbidden, errorBody{Error: err.Error()})
				return
			}
		}
		if !g.required || r.URL.Path == "/api/login" || r.URL.Path == "/api/session" {
			next.ServeHTTP(w, r)
			return
		}
		sess := g.session(r)
		if sess == nil {
			writeJSON(w, http.StatusUnauthorized, errorBody{Error: "login needed", NeedLogin: true})
			return
		}
		if changing(r.Method) && subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(sess.csrf)) != 1 {
			s.log.Warn("console: change without the session's CSRF token refused", "method", r.Method,
				"path", r.URL.Path, "remote", r.RemoteAddr, "account", sess.account.AccessKey)
			writeJSON(w, http.StatusForbidden, errorBody{Error: "the change lacks this session's " + csrfHeader + " (reload the page)"})
			return
		}
		next.ServeHTTP(w, withSession(r, sess))
	})
}

// sessionBody is GET /api/session and the answer of POST /api/login.
type sessionBody struct {
	Login     bool   `json:"login"`               // the console requires a login
	AccessKey string `json:"accessKey,omitempty"` // the session's account
	Admin     bool   `json:"admin,omitempty"`
	CSRFToken string `json:"csrfToken,omitempty"` // to send in X-CSRF-Token with every change
}

func (s *Server) getSession(r *http.Request) (any, error) {
	if !s.login.required {
		return sessionBody{}, nil
	}
	sess := s.login.session(r)
	if sess == nil {
		return nil, &apiError{status: http.StatusUnauthorized, needLogin: true, msg: "login needed"}
	}
	return sessionBody{Login: true, AccessKey: sess.account.AccessKey, Admin: sess.admin, CSRFToken: sess.csrf}, nil
}

// loginRequest is POST /api/login's body.
type loginRequest struct {
	AccessKey string `json:"accessKey"`
	SecretKey string `json:"secretKey"`
}

// postLogin opens a session. Like every change it needs the request header and a JSON body (no HTML form of
// another site can send either) and passes sameOrigin (in guard).
func (s *Server) postLogin(w http.ResponseWriter, r *http.Request) {
	answer := func(v any, err error) {
		if err != nil {
			writeJSON(w, statusOf(err), errorBody{Error: err.Error(), NeedLogin: isNeedLogin(err)})
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
	if !s.login.required {
		answer(nil, badRequest("the console requires no login (%s)", s.login.why))
		return
	}
	if r.Header.Get(requestHeader) != "1" {
		answer(nil, &apiError{status: http.StatusForbidden, msg: "a login needs the " + requestHeader + " header (it comes from the console's pages)"})
		return
	}
	var req loginRequest
	if err := decodeBody(r, &req); err != nil {
		answer(nil, err)
		return
	}
	sess, err := s.login.login(w, r, strings.TrimSpace(req.AccessKey), req.SecretKey)
	if err != nil {
		s.log.Warn("console: login refused", "account", req.AccessKey, "remote", r.RemoteAddr, "err", err)
		answer(nil, err)
		return
	}
	s.log.Info("console: login", "account", sess.account.AccessKey, "remote", r.RemoteAddr)
	answer(sessionBody{Login: true, AccessKey: sess.account.AccessKey, Admin: sess.admin, CSRFToken: sess.csrf}, nil)
}

// postLogout ends the session (guard checked its CSRF token).
func (s *Server) postLogout(w http.ResponseWriter, r *http.Request) {
	s.login.logout(w, r)
	writeJSON(w, http.StatusOK, sessionBody{Login: s.login.required})
}

type sessionKey struct{}

// withSession attaches the request's session for the handlers.
func withSession(r *http.Request, s *session) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, s))
}

// sessionOf is the session guard attached, or nil (no login required).
func sessionOf(r *http.Request) *session {
	s, _ := r.Context().Value(sessionKey{}).(*session)
	return s
}

func isNeedLogin(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.needLogin
}
