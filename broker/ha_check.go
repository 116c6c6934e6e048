package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocketraft/rocketraft/ha"
	"github.com/rocketraft/rocketraft/remoting"
)

// The tail check (package ha, request code ha.CheckRequestCode, private to this broker): before each
// HA connection a slave asks its master which records of its tail the master holds byte for byte,
// and truncates its log where they part. The request travels over the master's remoting port.

// tailCheckTimeout bounds one tail check.
const tailCheckTimeout = 5 * time.Second

// processTailCheck answers a slave's tail check.
func (m *classicMaster) processTailCheck(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	check, err := ha.DecodeCheckRequest(req.Body)
	if err != nil {
		return errResponse(remoting.InvalidParameter, "%v", err)
	}
	resp := remoting.NewResponse(remoting.Success, "")
	resp.Body = ha.AnswerCheck(m.b.store, check).Encode()
	return resp
}

// refuseTailCheck answers a tail check that reached a slave: only a master answers them.
func (s *classicSlave) refuseTailCheck(ctx context.Context, conn *remoting.Conn, req *remoting.Command) *remoting.Command {
	return errResponse(remoting.ServiceNotAvailable, "broker %s is a slave (brokerId %d): only a master answers tail checks", s.b.addr, s.b.cfg.BrokerID)
}

// masterTailChecker sends a slave's tail checks to its master's remoting port.
type masterTailChecker struct{ s *classicSlave }

func (c masterTailChecker) CheckTail(ctx context.Context, req ha.CheckRequest) (ha.CheckResponse, error) {
	b := c.s.b
	addr := b.masterAddress()
	if addr == "" {
		if len(b.cfg.NamesrvAddrs()) == 0 {
			return ha.CheckResponse{}, fmt.Errorf("%w: no name server to learn the master's remoting address from", ha.ErrCheckUnsupported)
		}
		return ha.CheckResponse{}, errors.New("the master's remoting address is not known yet (no registration answer names it)")
	}
	ctx, cancel := context.WithTimeout(ctx, tailCheckTimeout)
	defer cancel()
	resp, err := c.s.remote.Invoke(ctx, addr, remoting.NewRequest(remoting.RequestCode(ha.CheckRequestCode), nil, req.Encode()))
	if err != nil {
		return ha.CheckResponse{}, fmt.Errorf("tail check to master %s: %w", addr, err)
	}
	switch resp.Code {
	case int32(remoting.Success):
		return ha.DecodeCheckResponse(resp.Body, len(req.Probes))
	case int32(remoting.RequestCodeNotSupported):
		return ha.CheckResponse{}, fmt.Errorf("%w: master %s: %s", ha.ErrCheckUnsupported, addr, resp.Remark)
	default:
		return ha.CheckResponse{}, fmt.Errorf("tail check to master %s: %w", addr, &remoteError{code: resp.Code, remark: resp.Remark})
	}
}
