// Package servers is the start-up of the name server, the broker and the proxy from their command lines: the
// mains (cmd/mqnamesrv, cmd/mqbroker, cmd/mqproxy) and the end-to-end tests' child processes call RunNamesrv
// (namesrv.go), RunBroker (broker.go) and RunProxy (proxy.go), which load the config, open the log files,
// run the server until SIGINT or SIGTERM (SIGHUP re-reads logLevel) and return the exit code. What the
// three share is in config_logs_signals.go.
package servers
