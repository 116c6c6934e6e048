// Package console is the web console of `mqadmin console -n NAMESRV --listen ADDR`: pages for the cluster,
// topics, consumer groups, messages and producers, a JSON API they call, and a sampler that keeps the last
// minutes of throughput and lag in memory for the plots. Everything is served from the binary (the pages are
// embedded with embed; no CDN, works offline).
//
// # Where the data comes from
//
// A Source (source.go) answers every page; tools/admin implements it with mqadmin's own requests over
// RocketMQ's wire protocol (GET_BROKER_CLUSTER_INFO, GET_BROKER_RUNTIME_INFO, GET_TOPIC_STATS_INFO,
// GET_CONSUME_STATS, QUERY_MESSAGE, PULL_MESSAGE, ...), so the console works against RocketRaft and RocketMQ
// alike. This package imports nothing of tools/admin: the Source interface is the seam, and the tests
// here use a fake.
//
// # API
//
//	GET    /api/config                        sample interval and history window
//	GET    /api/cluster                       brokers (role, address, version, TPS in/out, disk, ACL, Raft)
//	GET    /api/history[?group=G]             TPS per broker and lag per group over the window
//	GET    /api/topics                        topic names with their kind (normal, retry, dlq, system)
//	POST   /api/topics                        create or update a topic (TopicSpec)           change
//	GET    /api/topics/{topic}                route, queue min/max offsets, consuming groups
//	DELETE /api/topics/{topic}?cluster=C      delete from the cluster's brokers and the name servers   change
//	GET    /api/groups                        consumer groups with members and total lag
//	GET    /api/groups/{group}                members, subscriptions, lag per queue with totals
//	POST   /api/groups/{group}/reset          {"topic":T,"timestamp":MS or -1}               change
//	GET    /api/messages?topic=T&key=K[&max=N]            by key
//	GET    /api/messages?topic=T&begin=MS&end=MS[&max=N]  by store time, per queue, committing nothing
//	GET    /api/messages/{id}[?topic=T]       one message (offset id, or unique id with its topic) with its
//	                                          delivery trace: per consuming group, its offset on the
//	                                          message's queue against the message's queue offset
//	GET    /api/producers?group=G&topic=T     producers of a group connected to the topic's brokers
//
// The operations pages (api_ops.go; their types in source_ops.go):
//
//	GET    /api/messages/{id}/trace[?traceTopic=T]    a message's trace records (clients with tracing on send
//	                                          them to the trace topic, the brokers' msgTraceTopicName), by unique id
//	POST   /api/messages/{id}/consume         {"topic","group","clientId"}: CONSUME_MESSAGE_DIRECTLY   change
//	POST   /api/topics/{topic}/send           {"tags","keys","body"}: a test message                    change
//	GET    /api/dlq?group=G[&begin&end&max]   the group's dead letters (%DLQ%G) by store time (default: a day)
//	GET    /api/dlq/export?group=G[...]       the same in full, as a JSON file download
//	POST   /api/dlq/resend                    {"group","ids":[offset ids]}: copies to the original topic change
//	GET    /api/subgroups                     every master's subscription groups
//	POST   /api/subgroups                     {"cluster","config":SubscriptionGroupConfig}              change
//	DELETE /api/subgroups/{group}?cluster=C   the group's config and offsets                           change
//	GET    /api/groups/{group}/clients/{id}   a consumer's own report (GET_CONSUMER_RUNNING_INFO)
//	GET    /api/brokers/{addr}/config         a broker's config (GET_BROKER_CONFIG)
//	GET    /api/tps/topics                    each topic's TPS in and out over the last minute (statsAll's figures;
//	                                          asked of the cluster at most every five sample intervals)
//
// The ACL accounts page (api_acl.go). The brokers answer their ACL file to admin accounts only, so the read
// too goes the way of a change (request header, signed with the person's account); secret keys are blanked
// before the answer:
//
//	GET    /api/acl                           each master's accounts and global white addresses     signed
//	POST   /api/acl/accounts                  {"cluster","account":PlainAccessConfig} (no secret: kept) change
//	DELETE /api/acl/accounts/{ak}?cluster=C   remove an account                                        change
//	POST   /api/acl/whiteaddrs                {"cluster","addrs":[...]}                                change
//
// Answers are JSON; a failure is {"error": "..."} with 400 (a bad parameter, named), 401 (an admin account is
// needed: "needAccount": true), 403 (a broker refused the account), 404, 502 (a server failed) or 504.
// Message bodies travel in base64 and the pages show them as text or hex.
//
// # Changes, ACL and the admin account
//
// Changes (the routes marked above) must carry the X-Console-Request header, which a page of another site
// cannot send without a CORS preflight the console never grants, and a JSON body. They are signed with the
// account of the X-Console-Access-Key / X-Console-Secret-Key headers, which the pages take from the person at
// the browser ("Admin account") and keep in the tab's sessionStorage. When a broker reports ACL on
// (aclEnable, or it refused the console's own account), a change without an account is refused with 401:
// changes need the person's admin account, not the console's. The brokers then check that the account is an
// admin for topic changes, as RocketMQ does; resetting offsets needs a valid account (RocketMQ does not
// count INVOKE_BROKER_TO_RESET_OFFSET as an admin request). Reads use the console's own account (mqadmin's
// --accessKey/--secretKey or tools.yml), which needs no admin rights.
//
// # Login, sessions and CSRF (login.go)
//
//	GET    /api/session                       {"login":bool,"accessKey","admin","csrfToken"}, or 401 needLogin
//	POST   /api/login                         {"accessKey","secretKey"} -> the session's body; sets the cookie
//	POST   /api/logout                        ends the session                                change
//
// A login is required when Listen reaches beyond loopback (a wildcard or empty host, a non-loopback address,
// a host name other than localhost) or with RequireLogin (--login); New then needs AclFile (--aclFile), whose
// accounts log in with their secret key (acl.Validator.Login, constant-time), and fails naming --aclFile
// without it. (The login is checked against the file, not by asking a broker to accept a request signed with
// the typed secret: a broker with ACL off, or one that white-lists the console's address, accepts any secret.)
// Five failed logins from one address within a minute refuse its logins (429) until the minute ends.
// Start logs "login required (why; accounts of FILE)" or "login off (why)", and warns when a login
// is required over plain HTTP. The pages' files are public (they hold no data); every /api/ call but the two
// above needs a live session, else 401 with needLogin, and the pages show the login form.
//
// A session is a random 256-bit id in memory, sent as a cookie that is HttpOnly and SameSite=Strict, and
// Secure (named __Host-rrconsole_session) when the console serves TLS itself (TLSCertPath); over plain HTTP
// it is rrconsole_session without Secure. It ends after 30 min idle, 12 h in all, at logout, or at Close.
// Changes are checked twice against cross-site request forgery: the browser's Origin must be the console's
// own and Sec-Fetch-Site same-origin (checked for every change, login or not; clients that send neither, such
// as curl, are no browser a page could drive), and with a login each change must carry the session's
// synchronizer token in X-CSRF-Token (the pages read it from /api/session into memory). A change without an
// account header is signed with the session's account.
//
// # Pages
//
// assets/ holds plain ES modules, no build step: app.js (router on location.hash, admin account),
// dom.js (nodes are built with el(), so data is always text, never HTML), chart.js (SVG line charts),
// page_*.js (page_dlq.js dead letters, page_subgroups.js subscription groups, page_acl.js ACL accounts; a consumer's running info is
// in page_groups.js, a broker's config and the topics' TPS in page_cluster.js, the trace and consume directly
// on a message's page). The Content-Security-Policy allows only the console's own scripts and styles. Pages with
// figures (cluster, groups, a group) refresh themselves every sample interval.
//
// # Sampling
//
// Every SampleInterval the sampler asks the Source for the brokers and the groups, records TPS in/out per
// broker and total lag per group, and drops what is older than History. While a cluster page has asked for
// the topics' TPS within History, every fifth sample takes it too (the busiest topics are plotted). A group whose page was opened is
// sampled for the next History even if the group list does not show it (no retry topic yet). The last
// answers also serve the cluster and group lists when they are at most two intervals old, so pages that
// refresh themselves cost the cluster nothing extra.
//
// # Raft
//
// Broker.Raft (group, node, Raft role, term, leader, commit and applied index) drives the Raft columns of the
// cluster page; they appear only when some broker reports one. tools/admin fills it from the broker's
// GET_RAFT_STATUS (the request of mqadmin getRaftStatus); a classic broker, or RocketMQ's, does not know the
// request and has no Raft status.
//
// # Tests
//
// The API and the sampler are tested against a fake Source (api_test.go, server_test.go). browser_test.go
// drives the pages in headless Chromium (chromedp, /usr/bin/chromium; the tests skip without it) against an
// in-process cluster with traffic, through tools/admin's Source: every page, a topic created, updated and
// deleted from the pages, messages by key, id and time, a group's lag reset from its page and falling as it
// consumes, and the refusals under ACL; browser_login_test.go logs in, is refused without a session, and
// has a page of another origin post forms to the console, refused; browser_ops_test.go shows a message the
// official Go client sent and consumed with tracing on with its trace, consumes it again directly, lists,
// views, exports and resends dead letters (consumed again), creates, updates and deletes a subscription
// group, shows a broker's config, sends a test message from the topic page, the topic's TPS, and a
// consumer's running info (a stand-in client's full report, and the official Go client's own); browser_acl_test.go edits ACL accounts from the page and checks what a client
// signed with the account may then do. They save screenshots in $CONSOLE_SCREENSHOTS/<test name>/ (default:
// the test's temp folder).
//
// # Lifecycle
//
// New validates the Config (errors name the mqadmin flags), Start binds and starts the HTTP server and the
// sampler, Close cancels the sampler and the requests in flight, shuts the server down and waits for both.
package console
