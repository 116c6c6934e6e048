package console

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// sampler asks the source for the brokers' figures and the groups' lag every interval, feeds the history
// and keeps the last answers for the pages (so a page that refreshes itself costs no request to the
// cluster). Groups whose page was opened within the window are sampled too, even without a retry topic;
// the topics' TPS every fifth interval while a page asked for it within the window.
type sampler struct {
	src      Source
	log      *slog.Logger
	interval time.Duration
	hist     *history

	brokerCache cache[[]Broker]
	groupCache  cache[[]GroupSummary]
	topicCache  cache[[]TopicTPS] // filled on demand only (a request per topic and broker)
	mu          struct {
		sync.Mutex
		watched       map[string]time.Time // group -> when its page last asked
		topicsWatched time.Time            // when a page last asked for the topics' TPS
		ticks         int                  // samples taken
	}
}

func newSampler(src Source, log *slog.Logger, interval time.Duration, hist *history) *sampler {
	s := &sampler{src: src, log: log, interval: interval, hist: hist}
	s.mu.watched = map[string]time.Time{}
	return s
}

// run samples at once and then every interval until ctx is done.
func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		s.sample(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sample takes one sample at now. Failures are logged and leave the history without a point.
func (s *sampler) sample(ctx context.Context, now time.Time) {
	if brokers, err := s.src.Brokers(ctx); err != nil {
		s.log.Warn("console: sample brokers", "err", err)
	} else {
		s.hist.addTPS(now, brokers)
		s.brokerCache.set(now, brokers)
	}
	lags := map[string]int64{}
	if groups, err := s.src.Groups(ctx); err != nil {
		s.log.Warn("console: sample groups", "err", err)
	} else {
		for _, g := range groups {
			lags[g.Group] = g.Lag
		}
		s.groupCache.set(now, groups)
	}
	for _, g := range s.watchedGroups(now) {
		if _, ok := lags[g]; ok || ctx.Err() != nil {
			continue
		}
		if grp, err := s.src.Group(ctx, g); err == nil {
			lags[g] = grp.Lag
		}
	}
	s.hist.addLag(now, lags)
	if s.topicsDue(now) {
		// Through the cache: a page's request within the five intervals is the sample.
		if topics, err := s.topicCache.get(ctx, 5*s.interval, s.src.TopicTPS); err != nil {
			s.log.Warn("console: sample topics", "err", err)
		} else {
			s.hist.addTopicTPS(now, topics)
		}
	}
}

// topicsDue reports whether this sample takes the topics' TPS too: every fifth sample while a page asked
// for them within the window (they cost a request per topic, broker and consuming group).
func (s *sampler) topicsDue(now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.ticks++
	return s.mu.ticks%5 == 1 && !s.mu.topicsWatched.IsZero() && now.Sub(s.mu.topicsWatched) <= s.hist.window
}

// watch asks for group's lag to be sampled for the next window.
func (s *sampler) watch(group string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.watched[group] = now
}

func (s *sampler) watchedGroups(now time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for g, at := range s.mu.watched {
		if now.Sub(at) > s.hist.window {
			delete(s.mu.watched, g)
			continue
		}
		out = append(out, g)
	}
	return out
}

// cache holds the last answer of one kind and when it came. Safe for concurrent use.
type cache[T any] struct {
	mu struct {
		sync.Mutex
		v  T
		at time.Time
	}
}

func (c *cache[T]) set(now time.Time, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.v, c.mu.at = v, now
}

// get is the held answer when it is at most maxAge old, else fetch's (which it then holds).
func (c *cache[T]) get(ctx context.Context, maxAge time.Duration, fetch func(context.Context) (T, error)) (T, error) {
	now := time.Now()
	c.mu.Lock()
	v, at := c.mu.v, c.mu.at
	c.mu.Unlock()
	if !at.IsZero() && now.Sub(at) <= maxAge {
		return v, nil
	}
	v, err := fetch(ctx)
	if err != nil {
		return v, err
	}
	c.set(now, v)
	return v, nil
}

// brokers is the last sample of the brokers when it is at most two intervals old (so a page that refreshes
// at the interval never waits on the cluster), else a new answer, which becomes the sample.
func (s *sampler) brokers(ctx context.Context) ([]Broker, error) {
	return s.brokerCache.get(ctx, 2*s.interval, s.src.Brokers)
}

// groups is the last sample of the groups, as brokers.
func (s *sampler) groups(ctx context.Context) ([]GroupSummary, error) {
	return s.groupCache.get(ctx, 2*s.interval, s.src.Groups)
}

// topicTPS is the topics' throughput, asked of the cluster at most once every five intervals: it costs a
// request per topic, broker and consuming group, and is a one-minute rate anyway.
// Asking has the sampler follow the topics' TPS for the next window.
func (s *sampler) topicTPS(ctx context.Context) ([]TopicTPS, error) {
	s.mu.Lock()
	s.mu.topicsWatched = time.Now()
	s.mu.Unlock()
	return s.topicCache.get(ctx, 5*s.interval, s.src.TopicTPS)
}
