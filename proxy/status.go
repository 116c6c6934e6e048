package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocketraft/rocketraft/client"
	"github.com/rocketraft/rocketraft/proxy/v2pb"
	"github.com/rocketraft/rocketraft/remoting"
)

// ok is the OK status.
func ok() *v2pb.Status { return &v2pb.Status{Code: v2pb.Code_OK, Message: "OK"} }

// st is a status with a formatted message.
func st(code v2pb.Code, format string, args ...any) *v2pb.Status {
	return &v2pb.Status{Code: code, Message: fmt.Sprintf(format, args...)}
}

// statusError is an error that carries the status a call answers with.
type statusError struct{ s *v2pb.Status }

func (e *statusError) Error() string { return e.s.Code.String() + ": " + e.s.Message }

// fail is an error carrying a status with a formatted message.
func fail(code v2pb.Code, format string, args ...any) error {
	return &statusError{st(code, format, args...)}
}

// toStatus is the status a failure answers with: a statusError's own, a broker's refusal mapped from its
// remoting code (the remark kept), a timeout as PROXY_TIMEOUT, anything else INTERNAL_SERVER_ERROR.
func toStatus(err error) *v2pb.Status {
	var se *statusError
	if errors.As(err, &se) {
		return se.s
	}
	var re *client.ResponseError
	if errors.As(err, &re) {
		return st(mapCode(re.Code), "%s", err.Error())
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, remoting.ErrTimeout) {
		return st(v2pb.Code_PROXY_TIMEOUT, "%v", err)
	}
	return st(v2pb.Code_INTERNAL_SERVER_ERROR, "%v", err)
}

// mapCode maps a broker's remoting answer code to the v2 code RocketMQ 5's proxy answers it with.
func mapCode(c remoting.ResponseCode) v2pb.Code {
	switch c {
	case remoting.Success:
		return v2pb.Code_OK
	case remoting.TopicNotExist:
		return v2pb.Code_TOPIC_NOT_FOUND
	case remoting.SubscriptionGroupNotExist:
		return v2pb.Code_CONSUMER_GROUP_NOT_FOUND
	case remoting.NoPermission:
		return v2pb.Code_FORBIDDEN
	case remoting.MessageIllegal, remoting.InvalidParameter, remoting.SubscriptionParseFailed, remoting.IllegalOperation:
		return v2pb.Code_BAD_REQUEST
	case remoting.FlushDiskTimeout:
		return v2pb.Code_MASTER_PERSISTENCE_TIMEOUT
	case remoting.FlushSlaveTimeout:
		return v2pb.Code_SLAVE_PERSISTENCE_TIMEOUT
	case remoting.SlaveNotAvailable:
		return v2pb.Code_HA_NOT_AVAILABLE
	case remoting.SystemBusy, remoting.FlowControl:
		return v2pb.Code_TOO_MANY_REQUESTS
	case remoting.QueryNotFound, remoting.NoMessage:
		return v2pb.Code_MESSAGE_NOT_FOUND
	case remoting.RequestCodeNotSupported:
		return v2pb.Code_NOT_IMPLEMENTED
	case remoting.VersionNotSupported:
		return v2pb.Code_VERSION_UNSUPPORTED
	}
	return v2pb.Code_INTERNAL_SERVER_ERROR
}
