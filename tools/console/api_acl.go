package console

import (
	"net/http"
	"strings"

	"github.com/rocketraft/rocketraft/protocol"
)

// The ACL accounts page's API. Reading the brokers' ACL files needs an admin account as much as changing
// them does, so GET /api/acl goes through admin too: it carries the request header and is signed with the
// person's account.

type aclBody struct {
	Brokers []BrokerACL `json:"brokers"`
}

func (s *Server) getACL(r *http.Request, adm Admin) (any, error) {
	brokers, err := adm.ACLConfigs(r.Context())
	if err != nil {
		return nil, err
	}
	if brokers == nil {
		brokers = []BrokerACL{}
	}
	for i := range brokers {
		for j := range brokers[i].Accounts {
			brokers[i].Accounts[j].SecretKey = "" // never to the page
		}
	}
	return aclBody{Brokers: brokers}, nil
}

// aclAccountRequest is the body of POST /api/acl/accounts.
type aclAccountRequest struct {
	Cluster string                     `json:"cluster"`
	Account protocol.PlainAccessConfig `json:"account"`
}

func (s *Server) postACLAccount(r *http.Request, adm Admin) (any, error) {
	var req aclAccountRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	a := &req.Account
	a.AccessKey = strings.TrimSpace(a.AccessKey)
	// The brokers check the account (key lengths, permissions, address patterns) and name what is wrong.
	switch {
	case strings.TrimSpace(req.Cluster) == "":
		return nil, badRequest("cluster is required")
	case a.AccessKey == "":
		return nil, badRequest("account.accessKey is required")
	}
	brokers, err := adm.UpdateACLAccount(r.Context(), strings.TrimSpace(req.Cluster), *a)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: ACL account updated", "accessKey", a.AccessKey, "cluster", req.Cluster, "from", r.RemoteAddr)
	return brokersBody{Brokers: brokers}, nil
}

func (s *Server) deleteACLAccount(r *http.Request, adm Admin) (any, error) {
	cluster, err := param(r, "cluster")
	if err != nil {
		return nil, err
	}
	ak := r.PathValue("accessKey")
	brokers, err := adm.DeleteACLAccount(r.Context(), cluster, ak)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: ACL account deleted", "accessKey", ak, "cluster", cluster, "from", r.RemoteAddr)
	return brokersBody{Brokers: brokers}, nil
}

// whiteAddrsRequest is the body of POST /api/acl/whiteaddrs.
type whiteAddrsRequest struct {
	Cluster string   `json:"cluster"`
	Addrs   []string `json:"addrs"`
}

func (s *Server) postWhiteAddrs(r *http.Request, adm Admin) (any, error) {
	var req whiteAddrsRequest
	if err := decodeBody(r, &req); err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Cluster) == "" {
		return nil, badRequest("cluster is required")
	}
	addrs := []string{}
	for _, a := range req.Addrs {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	brokers, err := adm.UpdateGlobalWhiteAddrs(r.Context(), strings.TrimSpace(req.Cluster), addrs)
	if err != nil {
		return nil, err
	}
	s.log.Info("console: ACL global white addresses updated", "addrs", addrs, "cluster", req.Cluster, "from", r.RemoteAddr)
	return brokersBody{Brokers: brokers}, nil
}
