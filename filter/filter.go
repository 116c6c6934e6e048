package filter

import (
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

// Filter applies a compiled SQL92 selector to the messages a pull reads. It implements
// store.MessageFilter; like the Expression it wraps it is immutable and safe for concurrent
// use.
type Filter struct {
	expr *Expression
}

var _ store.MessageFilter = (*Filter)(nil)

// NewFilter returns a Filter for expr. A nil expr matches every message, as RocketMQ does
// for a subscription without a compiled expression.
func NewFilter(expr *Expression) *Filter { return &Filter{expr: expr} }

// Expression returns the selector the filter applies, nil if none.
func (f *Filter) Expression() *Expression { return f.expr }

// MatchByConsumeQueue always returns true: an SQL92 selector needs the message properties,
// which only the CommitLog record holds. (RocketMQ can consult a per-group bloom filter
// here; this package does not build one.)
func (f *Filter) MatchByConsumeQueue(tagsCode int64) bool { return true }

// MatchByCommitLog evaluates the selector on props, or, when props is nil, on the properties
// decoded from record, a whole stored message record. A record whose properties cannot be
// decoded does not match. record is not kept.
func (f *Filter) MatchByCommitLog(record []byte, props map[string]string) bool {
	if f.expr == nil {
		return true
	}
	if props == nil {
		var err error
		if props, err = message.RecordProperties(record); err != nil {
			return false
		}
	}
	return f.expr.Evaluate(props)
}
