package broker

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rocketraft/rocketraft/remoting"
)

// The broker's small helpers, used by handlers and services across the package.

// errResponse answers a request with code and a remark that says what went wrong.
func errResponse(code remoting.ResponseCode, format string, args ...any) *remoting.Command {
	return remoting.NewResponse(code, fmt.Sprintf(format, args...))
}

// ms is a config value in milliseconds as a duration.
func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// itoa formats n in base 10 (header fields and ext values).
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
