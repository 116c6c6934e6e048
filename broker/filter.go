package broker

import (
	"github.com/rocketraft/rocketraft/filter"
	"github.com/rocketraft/rocketraft/message"
	"github.com/rocketraft/rocketraft/store"
)

func tagsHash(tag string) int64 { return message.TagsHash(tag) }

// tagFilter matches ConsumeQueue units by tag hash, as RocketMQ's ExpressionMessageFilter does for TAG
// subscriptions. Hash collisions are resolved by the client, which filters again by the tag string.
type tagFilter struct {
	sub *subscriptionInfo // nil = everything
}

var _ store.MessageFilter = tagFilter{}

func (f tagFilter) MatchByConsumeQueue(tagsCode int64) bool {
	if f.sub == nil || f.sub.all {
		return true
	}
	return f.sub.codes[tagsCode]
}

func (f tagFilter) MatchByCommitLog(record []byte, props map[string]string) bool { return true }

// messageFilter is the store filter of a subscription: tag hashes, or the SQL92 expression evaluated on
// each message's properties.
func (si *subscriptionInfo) messageFilter() store.MessageFilter {
	if si != nil && si.sql != nil {
		return filter.NewFilter(si.sql)
	}
	return tagFilter{sub: si}
}
