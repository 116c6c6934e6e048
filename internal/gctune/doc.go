// Package gctune keeps a server's Go heap from being collected far more often than it needs.
//
// Go sets the next collection's heap target at live × (1 + GOGC/100), GOGC 100 by default. A
// broker's live heap is small (about 5 MB under a 16-producer send load: the messages live in
// the CommitLog's page cache, not on the heap), while it allocates fast (a request's frame, its
// header map, the answer), so with the default a broker collected about 27 times a second, each
// collection 3-4 ms of CPU: about a tenth of the broker's CPU. The tuner keeps the target at
// least Floor bytes: after every collection it sets GOGC so that live × (1 + GOGC/100) reaches
// the floor, and back to 100 once the live heap is half the floor or more. The floor is the
// most memory this costs (the heap grows up to it before a collection); a heap larger than the
// floor is collected as Go would anyway. A GOGC set in the environment wins: the tuner does not
// start, and a GOMEMLIMIT still caps the heap as Go documents.
package gctune
