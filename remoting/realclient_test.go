package remoting

import (
	"context"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// The official Go client's admin API against a tiny server built on Server: its frames decode here, ours decode
// there, and header fields travel both ways.
func TestOfficialGoClientAgainstServer(t *testing.T) {
	rlog.SetLogLevel("error")
	created := make(chan map[string]string, 1)
	pool := NewPool("admin", 2, 16)
	s := startServer(t, ServerConfig{}, nil, func(s *Server) {
		s.Register(GetAllTopicListFromNameServer, pool, func(context.Context, *Conn, *Command) *Command {
			resp := NewResponse(Success, "")
			resp.Body = []byte(`{"topicList":["TopicA","TopicB"],"brokerAddr":null}`)
			return resp
		})
		s.Register(UpdateAndCreateTopic, pool, func(_ context.Context, _ *Conn, req *Command) *Command {
			created <- req.ExtFields
			return NewResponse(Success, "")
		})
	})
	addr := s.Addr().String()
	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{addr})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.TopicList) != 2 || list.TopicList[0] != "TopicA" {
		t.Fatalf("topic list %+v", list)
	}
	err = adm.CreateTopic(ctx, admin.WithTopicCreate("NewTopic"), admin.WithBrokerAddrCreate(addr),
		admin.WithReadQueueNums(3), admin.WithWriteQueueNums(5))
	if err != nil {
		t.Fatal(err)
	}
	ext := <-created
	if ext["topic"] != "NewTopic" || ext["readQueueNums"] != "3" || ext["writeQueueNums"] != "5" || ext["perm"] != "6" {
		t.Fatalf("UPDATE_AND_CREATE_TOPIC header %v", ext)
	}
}
