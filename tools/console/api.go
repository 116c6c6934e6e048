package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// Headers of the API. A change (POST, DELETE) must carry requestHeader: a page of another site cannot send
// it without the browser asking first (CORS preflight), which the console never allows, so it cannot make a
// visitor's browser change the cluster. The admin account of a change travels in the account headers.
const (
	requestHeader   = "X-Console-Request"
	accessKeyHeader = "X-Console-Access-Key"
	secretKeyHeader = "X-Console-Secret-Key"
)

// contentSecurityPolicy lets the pages run only the console's own scripts and styles and talk only to it.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func (s *Server) routes(assets fs.FS) http.Handler {
	api := http.NewServeMux()
	api.Handle("GET /api/session", s.api(s.getSession))
	api.HandleFunc("POST /api/login", s.postLogin)
	api.HandleFunc("POST /api/logout", s.postLogout)
	api.Handle("GET /api/config", s.api(s.getConfig))
	api.Handle("GET /api/cluster", s.api(s.getCluster))
	api.Handle("GET /api/history", s.api(s.getHistory))
	api.Handle("GET /api/topics", s.api(s.getTopics))
	api.Handle("POST /api/topics", s.admin(s.postTopic))
	api.Handle("GET /api/topics/{topic}", s.api(s.getTopic))
	api.Handle("DELETE /api/topics/{topic}", s.admin(s.deleteTopic))
	api.Handle("GET /api/groups", s.api(s.getGroups))
	api.Handle("GET /api/groups/{group}", s.api(s.getGroup))
	api.Handle("POST /api/groups/{group}/reset", s.admin(s.postReset))
	api.Handle("GET /api/messages", s.api(s.getMessages))
	api.Handle("GET /api/messages/{id}", s.api(s.getMessage))
	api.Handle("GET /api/producers", s.api(s.getProducers))
	api.Handle("GET /api/messages/{id}/trace", s.api(s.getTrace))
	api.Handle("POST /api/messages/{id}/consume", s.admin(s.postConsume))
	api.Handle("POST /api/topics/{topic}/send", s.admin(s.postSend))
	api.Handle("GET /api/dlq", s.api(s.getDLQ))
	api.HandleFunc("GET /api/dlq/export", s.getDLQExport)
	api.Handle("POST /api/dlq/resend", s.admin(s.postDLQResend))
	api.Handle("GET /api/subgroups", s.api(s.getSubGroups))
	api.Handle("POST /api/subgroups", s.admin(s.postSubGroup))
	api.Handle("DELETE /api/subgroups/{group}", s.admin(s.deleteSubGroup))
	api.Handle("GET /api/groups/{group}/clients/{clientId}", s.api(s.getRunningInfo))
	api.Handle("GET /api/brokers/{addr}/config", s.api(s.getBrokerConfig))
	api.Handle("GET /api/tps/topics", s.api(s.getTopicTPS))
	api.Handle("GET /api/acl", s.admin(s.getACL))
	api.Handle("POST /api/acl/accounts", s.admin(s.postACLAccount))
	api.Handle("DELETE /api/acl/accounts/{accessKey}", s.admin(s.deleteACLAccount))
	api.Handle("POST /api/acl/whiteaddrs", s.admin(s.postWhiteAddrs))
	api.Handle("/api/", s.api(func(r *http.Request) (any, error) {
		return nil, &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no API %s %s", r.Method, r.URL.Path)}
	}))
	mux := http.NewServeMux()
	mux.Handle("/api/", s.guard(api)) // the pages' own files need no login: they hold no data
	files := http.FileServerFS(assets)
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		files.ServeHTTP(w, r)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		mux.ServeHTTP(w, r)
	})
}

// apiError is an answer other than 200 with its reason.
type apiError struct {
	status      int
	msg         string
	needAccount bool // 401: the page should ask for an admin account
	needLogin   bool // 401: the page should show the login form
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// statusOf maps an error to its HTTP status: the console's own, then the Source's sentinels; anything else
// is the cluster failing (502), or not answering in time (504).
func statusOf(err error) int {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae.status
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrDenied):
		return http.StatusForbidden
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// errorBody is the JSON of every answer other than 200.
type errorBody struct {
	Error       string `json:"error"`
	NeedAccount bool   `json:"needAccount,omitempty"`
	NeedLogin   bool   `json:"needLogin,omitempty"`
}

// api turns a handler's value into a JSON answer, and its error into a status and an errorBody.
func (s *Server) api(h func(*http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := h(r)
		if err != nil {
			status := statusOf(err)
			body := errorBody{Error: err.Error()}
			var ae *apiError
			if errors.As(err, &ae) {
				body.NeedAccount, body.NeedLogin = ae.needAccount, ae.needLogin
			}
			if status >= 500 {
				s.log.Warn("console: request failed", "method", r.Method, "path", r.URL.Path, "status", status, "err", err)
			}
			writeJSON(w, status, body)
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}

// admin is api for the changes: the request must carry requestHeader, and is signed with the admin account
// of the account headers. Without one, a cluster with ACL on is refused here (401, needAccount) even when
// the console's own account could do it: changes need the person's admin account, not the console's.
func (s *Server) admin(h func(*http.Request, Admin) (any, error)) http.Handler {
	return s.api(func(r *http.Request) (any, error) {
		if r.Header.Get(requestHeader) != "1" {
			return nil, &apiError{status: http.StatusForbidden, msg: "changes need the " + requestHeader + " header (they come from the console's pages)"}
		}
		creds, err := accountOf(r)
		if err != nil {
			return nil, err
		}
		if sess := sessionOf(r); creds.AccessKey == "" && sess != nil {
			creds = sess.account // the logged-in person's account
		}
		if creds.AccessKey == "" {
			acl, err := s.aclOn(r.Context())
			if err != nil {
				return nil, err
			}
			if acl {
				return nil, &apiError{status: http.StatusUnauthorized, needAccount: true,
					msg: "ACL is on: this change needs an admin account (accessKey and secretKey)"}
			}
		}
		adm := s.cfg.Source.Admin(creds)
		defer func() {
			if err := adm.Close(); err != nil {
				s.log.Warn("console: close admin connections", "err", err)
			}
		}()
		return h(r, adm)
	})
}

// accountOf reads the account headers: both or neither.
func accountOf(r *http.Request) (remoting.Credentials, error) {
	ak, sk := strings.TrimSpace(r.Header.Get(accessKeyHeader)), r.Header.Get(secretKeyHeader)
	switch {
	case ak == "" && sk == "":
		return remoting.Credentials{}, nil
	case ak == "":
		return remoting.Credentials{}, badRequest("%s needs %s", secretKeyHeader, accessKeyHeader)
	case sk == "":
		return remoting.Credentials{}, badRequest("%s needs %s", accessKeyHeader, secretKeyHeader)
	}
	return remoting.Credentials{AccessKey: ak, SecretKey: remoting.Secret(sk)}, nil
}

// aclOn reports whether any broker has ACL on (or refused the console's own account).
func (s *Server) aclOn(ctx context.Context) (bool, error) {
	brokers, err := s.sampler.brokers(ctx)
	if err != nil {
		return false, err
	}
	for _, b := range brokers {
		if b.ACL {
			return true, nil
		}
	}
	return false, nil
}

// decodeBody decodes a JSON request body (at most 64 KiB) into v, refusing unknown fields.
func decodeBody(r *http.Request, v any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return &apiError{status: http.StatusUnsupportedMediaType, msg: "the request body must be application/json"}
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("request body: %v", err)
	}
	return nil
}

// param is a required query parameter.
func param(r *http.Request, name string) (string, error) {
	v := strings.TrimSpace(r.URL.Query().Get(name))
	if v == "" {
		return "", badRequest("parameter %s is required", name)
	}
	return v, nil
}

// intParam is an optional integer query parameter in [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	s := strings.TrimSpace(r.URL.Query().Get(name))
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("parameter %s=%q: want an integer from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

// configBody is GET /api/config.
type configBody struct {
	SampleIntervalMs int64 `json:"sampleIntervalMs"`
	HistoryMs        int64 `json:"historyMs"`
}

func (s *Server) getConfig(*http.Request) (any, error) {
	return configBody{SampleIntervalMs: s.cfg.SampleInterval.Milliseconds(), HistoryMs: s.cfg.History.Milliseconds()}, nil
}

// clusterBody is GET /api/cluster.
type clusterBody struct {
	Brokers  []Broker `json:"brokers"`
	Clusters []string `json:"clusters"`
	ACL      bool     `json:"acl"`
	Raft     bool     `json:"raft"` // some broker reports Raft status: the page shows the Raft columns
}

func (s *Server) getCluster(r *http.Request) (any, error) {
	brokers, err := s.sampler.brokers(r.Context())
	if err != nil {
		return nil, err
	}
	body := clusterBody{Brokers: brokers, Clusters: []string{}}
	seen := map[string]bool{}
	for _, b := range brokers {
		body.ACL = body.ACL || b.ACL
		body.Raft = body.Raft || b.Raft != nil
		if !seen[b.Cluster] {
			seen[b.Cluster] = true
			body.Clusters = append(body.Clusters, b.Cluster)
		}
	}
	sort.Strings(body.Clusters)
	if body.Brokers == nil {
		body.Brokers = []Broker{}
	}
	return body, nil
}

// historyBody is GET /api/history.
type historyBody struct {
	Now        int64       `json:"now"`
	IntervalMs int64       `json:"intervalMs"`
	WindowMs   int64       `json:"windowMs"`
	TPS        []TPSSeries `json:"tps"`
	Lag        []LagSeries `json:"lag"`
	// Topics are the busiest topics' TPS, sampled while a cluster page shows them (GET /api/tps/topics).
	Topics []TopicTPSSeries `json:"topics"`
}

func (s *Server) getHistory(r *http.Request) (any, error) {
	tps, lag := s.hist.snapshot(strings.TrimSpace(r.URL.Query().Get("group")))
	return historyBody{Now: time.Now().UnixMilli(), IntervalMs: s.cfg.SampleInterval.Milliseconds(),
		WindowMs: s.cfg.History.Milliseconds(), TPS: tps, Lag: lag, Topics: s.hist.topicSnapshot()}, nil
}
