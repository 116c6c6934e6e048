// Package peertls is the mutual TLS of the links between the servers of one cluster: the Raft
// transport of a broker group (raftlog) and the classic HA link between a master and its slaves
// (ha). It loads a node's certificate, key and the cluster's CA from the peerTls* keys, re-reads
// them when their files change, and checks that the certificate on the other end of a link is
// signed by that CA and names the node it claims to be.
//
// # Trust model
//
// One CA per cluster (peerTlsTrustCertPath) signs one certificate per node (peerTlsCertPath and
// peerTlsKeyPath). Whoever holds a certificate of that CA that names a group is a member of that
// group: the CA is the membership authority, so keep its key off the nodes (deploy/ makes it on
// the control host and ships only the certificates).
//
// A node certificate names the node in a URI subject alternative name:
//
//	rocketraft://<group>/<id>
//
// where group is the Raft group (dLegerGroup, or brokerName when it is empty) or, for the classic
// HA link, the brokerName, and id is the node's dLegerSelfId (any id for a classic master or
// slave, e.g. its brokerId). A certificate names at most one id per group. DNS and IP names may sit
// next to it (they are not used: peers are authenticated by the URI, not by the address they were
// dialed at, since a proxy or NAT may sit between them).
//
// Both ends of a link check the other (mutual TLS, TLS 1.2 or later):
//   - the chain must verify against the CA of peerTlsTrustCertPath, as it is on disk now;
//   - the certificate must name the local node's group;
//   - the dialing side knows whom it dialed (by the address in dLegerPeers, or the dial
//     override of dLegerPeersDial): the server's certificate must name that id;
//   - the accepting side takes the id the certificate names as the connection's identity, and
//     the protocol above binds every claim to it (raftlog: the id and address in each Raft RPC
//     header must be the certified id and that id's address in dLegerPeers).
//
// A connection that fails any check is closed before a single byte of the protocol is read from
// or written to it, and logged once with the remote address and the reason.
//
// # The name server (Trust)
//
// The name server is a member of no group; it keeps only the CA (its peerTlsTrustCertPath) and,
// under aclEnable, takes a client certificate that chains to it and names a node of any group
// (rocketraft://<group>/<id>) as the authority for its write requests (namesrv/acl.go). A
// certificate of the CA that names no node (an application's client certificate, should the CA
// issue those) authorises nothing.
//
// # Files and reloading
//
// The three files are read at start-up: a missing or unreadable file, a key that does not match
// its certificate, or a CA file without a certificate stops the start with an error naming the
// key. After that, every handshake stats the files (cheap next to a handshake) and, when a file's
// modification time or size changed, loads all three again; a set that does not load is logged
// once and the previous one kept, so a half-written renewal never takes a node off the network.
package peertls
