// Package acl is the broker's access control: RocketMQ 4.x's plain ACL (PlainAccessValidator and
// PlainPermissionManager), read from plain_acl.yml and enforced on every request through a remoting guard
// (Validator.Intercept, added with remoting.Server.AddGuard: nothing else on the server can remove it).
//
// # The file (rules.go)
//
//	globalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.*]
//	accounts:
//	  - accessKey: rocketmq2                 # > 6 characters
//	    secretKey: 12345678                  # > 6 characters; never logged, never in a remark
//	    whiteRemoteAddress: 192.168.1.*      # optional
//	    admin: false
//	    defaultTopicPerm: SUB                # DENY (also when missing), PUB, SUB or PUB|SUB
//	    defaultGroupPerm: SUB
//	    topicPerms: [topicA=DENY, topicB=PUB|SUB]
//	    groupPerms: [groupA=SUB]
//
// Address patterns (address.go): *, one address, a comma list, a {a,b} list, and per-part ranges
// (192.168.1.*, 10.0.0.1-20, IPv6 groups likewise). A file is refused whole when an account or a pattern is
// bad: at start the broker does not start; on a reload the rules before stay in force. Keys this version does
// not know are logged and ignored.
//
// # The check (validator.go), in RocketMQ's order
//
//  1. The remote address matches a global white pattern: pass, nothing else is looked at.
//  2. No AccessKey header, or one that no account has: NO_PERMISSION.
//  3. The remote address matches the account's whiteRemoteAddress: pass (RocketMQ 4.x skips the signature
//     and the permissions for it too; a white address is a trusted network, not a second factor).
//  4. The Signature header must be the HMAC-SHA1 of the request with the account's secret
//     (remoting.VerifySignature, which also accepts the Go client's unsigned SecurityToken).
//  5. A request that only publishes to RMQ_SYS_TRACE_TOPIC passes.
//  6. An admin request code (AdminCode: create/update/delete topic, update/delete subscription group,
//     update broker config, and ours: the ACL edits, the Raft operations) needs admin: true.
//  7. An admin account with no topicPerms and no groupPerms passes; otherwise every topic and group the
//     request touches (needsOf, RocketMQ's table) needs PUB or SUB in the account's entry for it, or in its
//     default when it has none. A retry topic %RETRY%G is group G. DENY refuses.
//
// A refusal is answered NO_PERMISSION with a remark such as "No permission: account [rocketmq2] has no PUB on
// topic [T]" and logged at info level with the remote address, request code and account.
//
// # Reload
//
// Start watches the file's folder (fsnotify); a change is loaded within moments, an unchanged content
// (same SHA-256) is not reloaded, and a file that does not read or parse is logged and refused while the
// rules before it stay in force (Status counts both). Write new files by renaming them into place.
//
// # Remote edits (edit.go)
//
// The broker's ACL requests edit the file: UpdateAccount (UPDATE_AND_CREATE_ACL_CONFIG: create an account, or
// change the fields the request names), DeleteAccount (DELETE_ACL_CONFIG), UpdateGlobalWhiteAddrs
// (UPDATE_GLOBAL_WHITE_ADDRS_CONFIG); Config and Version answer GET_BROKER_CLUSTER_ACL_CONFIG and
// GET_BROKER_CLUSTER_ACL_INFO. An edit reads the file on disk, checks the result as a load does, writes it
// atomically (temporary file, fsync, rename, fsync of the folder, the file's mode kept) with its dataVersion
// counter one higher, and puts it in force before it returns. The rewrite drops comments and unknown keys, as
// RocketMQ's does. Unlike RocketMQ, the edits and GET_BROKER_CLUSTER_ACL_CONFIG (whose answer holds the secret
// keys) need an admin account (AdminCode).
//
// # What is not here
//
// RocketMQ 4.9 also reads every *.yml under conf/acl/ besides plain_acl.yml; here there is the one file.
//
// # The name server
//
// RocketMQ 4.x's name server has no ACL. Here, with aclEnable on the name server, its write requests are
// authenticated against the same file format: Authenticate (authenticate.go) runs the first steps of the
// check above (white addresses, account, signature) and the name server decides what the account may do
// (namesrv/acl.go).
package acl
