package store

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrReadFault is returned (wrapped, with the file) when mapped memory cannot be read: the
// kernel reports an I/O error reading a page of a mapped file as SIGBUS, and so it does for a
// page past the end of a file cut beneath its mapping. Without this the process would die on
// the first read of such a page; with it the read that hit it fails, the rest of the store
// keeps serving, and the same read succeeds once the file reads again.
var ErrReadFault = errors.New("store: read error in a mapped file")

// probe touches every page of b (one byte per page, and the last byte) with faults on mapped
// memory turned into an error that names the file, before anyone reads b: the readers then
// never fault halfway through work that holds file references or locks. A page that stops
// reading between the probe and the read still faults (the window is the length of one read);
// the probe makes the common case, a bad block in an old file, a clear error.
func probe(b []byte, fileName string, off int64) (err error) {
	if len(b) == 0 {
		return nil
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			fault, ok := r.(interface{ Addr() uintptr })
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("%w: %s at offset %d (%d bytes; fault address %#x): the disk or the file failed; "+
				"this read is refused, the rest of the store is served", ErrReadFault, fileName, off, len(b), fault.Addr())
		}
	}()
	touchPages(b)
	return nil
}

// touchPages loads one byte of every page of b and the last byte; not inlined, so the loads
// are compiled whatever the caller does with the result.
//
//go:noinline
func touchPages(b []byte) byte {
	var x byte
	for i := 0; i < len(b); i += probePage {
		x ^= b[i]
	}
	return x ^ b[len(b)-1]
}

// probePage is the step of probe: the smallest page size of the platforms the store runs on.
const probePage = 4096
