package admin

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/remoting"
)

// NewClient returns mqadmin's client of the given name servers: the native client with JSON request headers,
// timeout bounding each request, and every request signed with creds when they are set. A nil logger
// discards.
func NewClient(namesrvs []string, timeout time.Duration, creds remoting.Credentials, log *slog.Logger) *client.Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return client.New(client.Config{Namesrvs: namesrvs, Timeout: timeout, Credentials: creds,
		Log: log.With("component", "mqadmin")})
}

// notFoundError is a lookup that found nothing (a message by id): the console answers it 404.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func notFoundf(format string, args ...any) error { return &notFoundError{fmt.Sprintf(format, args...)} }

// errNoNamesrv stands for client.ErrNoNamesrv in what mqadmin prints: a usage error naming the flag.
var errNoNamesrv = usagef("no name server: give -n host:port[;host:port] or set NAMESRV_ADDR")
