// Package testutil holds the helpers the tests of several packages share, so that each exists once:
// WaitFor polls a condition with a deadline (never a sleep standing in for synchronisation). Whole
// clusters in one process are package cluster's; certificates for peer TLS are package
// internal/peertls/peertlstest's. It imports nothing of ours, so any package's tests may use it.
package testutil
