package protocol

// Permission bits of a topic or queue (PermName.java). Wire format: never change.
const (
	PermPriority = 8
	PermRead     = 4
	PermWrite    = 2
	PermInherit  = 1
)

// MasterID is the broker id of a master; slaves have ids above it.
const MasterID int64 = 0
