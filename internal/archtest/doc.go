// Package archtest holds the architecture test: it reads the import graph of the module (go list) and
// fails when an import breaks a rule of ARCHITECTURE.md ("Packages and their import rules"). It has no
// code of its own; the rules and the check live in arch_test.go (each rule is shown to fail on a
// deliberate bad import in TestViolationsAreFound). floors_test.go draws ARCHITECTURE.md's import
// diagram from go list and fails when the file's copy differs (-update rewrites it).
// store_use_test.go holds one rule the import graph cannot express: ha and raftlog import store for
// its types and sentinels only, and reach the store through the CommitLog interface each owns (it
// parses their non-test files: no *store.Store, no call of a store function). tools_test.go: the client
// tools make no remoting client of their own.
package archtest
