package client

import (
	"errors"
	"fmt"

	"github.com/rocketraft/rocketraft/remoting"
)

// ErrNoNamesrv is returned by name server requests of a client configured without name servers.
var ErrNoNamesrv = errors.New("client: no name server configured")

// ResponseError is an answer other than SUCCESS: the request, the address that answered, the answer's code
// and remark. errors.Is(err, &ResponseError{Code: c}) matches any ResponseError with code c (Request, Addr
// and Remark of the target are ignored); HasCode says the same.
type ResponseError struct {
	Request remoting.RequestCode
	Addr    string
	Code    remoting.ResponseCode
	Remark  string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s to %s: %s (%d) %s", e.Request, e.Addr, e.Code, int32(e.Code), e.Remark)
}

// Is matches a target *ResponseError of the same Code.
func (e *ResponseError) Is(target error) bool {
	t, ok := target.(*ResponseError)
	return ok && t.Code == e.Code
}

// HasCode reports whether err is (or wraps) a ResponseError with code.
func HasCode(err error, code remoting.ResponseCode) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == code
}

// AnswerError is nil for a SUCCESS answer to a request of code sent to addr, else the *ResponseError.
func AnswerError(code remoting.RequestCode, addr string, resp *remoting.Command) error {
	if resp.Code == int32(remoting.Success) {
		return nil
	}
	return &ResponseError{Request: code, Addr: addr, Code: remoting.ResponseCode(resp.Code), Remark: resp.Remark}
}
