// Package logging lays the servers' logs out as RocketMQ's do: besides stderr, one file per concern in
// logDir (default ~/logs/rocketmqlogs, RocketMQ's ${user.home}/logs/rocketmqlogs), each rotated by size
// with a bounded number of old files kept (gopkg.in/natefinch/lumberjack.v2), at a level set by config
// and changeable while the process runs.
//
// # Routing
//
// The servers log with log/slog and tag each component's logger with a "component" attribute
// (log.With("component", "store")). The handler built by Open reads that attribute, from With or from the
// record itself, and writes the record to stderr and to the component's file:
//
//	mqbroker   broker.log   everything not listed below (processors, registration, Raft, ACL, metrics)
//	           store.log    store, raftlog, ha-master, ha-slave (RocketMQ's RocketmqStore logger: HA is there too)
//	           remoting.log remoting, namesrv-client
//	           stats.log    stats only, and not on stderr: RocketMQ's per-minute lines
//	                        "[TOPIC_PUT_NUMS] [TopicTest] Stats In One Minute, SUM: 120 TPS: 2.00 AVGPT: 1.00"
//	mqnamesrv  namesrv.log  everything (RocketMQ's name server also logs its remoting there)
//
// The files take slog's text format (time=... level=... msg=... key=value), stats.log RocketMQ's
// "yyyy-MM-dd HH:mm:ss,SSS INFO - <line>". A file grows to logFileMaxSize MiB (128, as RocketMQ's
// broker.log), is then renamed with a timestamp (broker-2026-12-02T17-01-02.123.log, lumberjack's naming;
// RocketMQ writes otherdays/broker.N.log) and logFileMaxIndex old files are kept per log (10, as RocketMQ).
//
// # Level
//
// logLevel (DEBUG, INFO, WARN, ERROR; default INFO) applies to stderr and the files alike, through one
// slog.LevelVar: Logs.SetLevel changes it for every logger derived from Logs.Logger at once, without a
// restart. The commands call it on SIGHUP (re-reading logLevel from the -c file) and the broker on
// UPDATE_BROKER_CONFIG with logLevel.
package logging
