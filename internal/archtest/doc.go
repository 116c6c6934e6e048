// Package archtest holds the architecture test: it reads the import graph of the module (go list) and
// fails when an import breaks a rule of ARCHITECTURE.md ("Packages and their import rules"). It has no
// code of its own; the rules and the check live in arch_test.go.
package archtest
